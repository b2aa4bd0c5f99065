import CoreDataStore
import Findings
import Foundation
import StoreFormats

// MARK: - Writers

extension Auditor {
    /// Transactions of one kind, for one finding: how many, their changes, the first ids (up to
    /// the evidence limit), when the first and last were made, and the writer values seen.
    struct WriteTally {
        var transactions: [Int64] = []
        var count = 0
        var changes = 0
        var first: String?
        var last: String?
        var values: Set<String> = []

        mutating func add(_ t: HistoryTransaction, changes: Int, limit: Int) {
            count += 1; self.changes += changes
            if transactions.count < limit { transactions.append(t.id) }
            first = first ?? t.timestamp; last = t.timestamp
        }
    }

    /// Who wrote what in one store's history, against the manifest's policy.
    struct WriterLedger {
        var violations: [String: WriteTally] = [:]        // "rule|stack"
        var afterCutover: [String: WriteTally] = [:]      // "rule|stack"
        var unattributed: [String: WriteTally] = [:]      // writer values
        /// Rule index → stack (or "unattributed") → transactions and changes.
        var seen: [Int: [String: (transactions: Int, changes: Int)]] = [:]
        var firstTransaction: Int64?
    }

    func auditWriters(store path: String, opened o: OpenedStore, stacks: [Manifest.Stack], sidesByRule: [[SideSource]],
                      audits: inout [AuditResult.EntityAudit]) throws -> [Finding] {
        guard !stacks.isEmpty else { return [] }
        guard o.store.history.present else {
            return [Finding(
                id: "history-missing", severity: .warning, store: path, entity: nil,
                message: "The store has no persistent history, so who wrote what cannot be checked.",
                evidence: ["stacks": .list(stacks.map { .string($0.name) })],
                explanation: "SwiftData turns history on; a Core Data stack that opens a store with history but without NSPersistentHistoryTrackingKey forces it read-only, and without history no writer can be audited.",
                suggestion: "Set NSPersistentHistoryTrackingKey on every Core Data stack that opens this store.")]
        }
        let storeHasWriter: (Int) -> Bool = { i in stacks.contains { $0.name == self.manifest.entities[i].writer } }
        let ledger = try writerLedger(store: path, opened: o, stacks: stacks, ruleOf: ruleIndexes(store: path, sidesByRule: sidesByRule),
                                      storeHasWriter: storeHasWriter)
        var findings = policyFindings(ledger, store: path)
        for (i, rule) in manifest.entities.enumerated() where sidesByRule[i].contains(where: { $0.storePath == path && $0.json == nil }) {
            let entries = ledger.seen[i] ?? [:]
            for (stack, counts) in entries.sorted(by: { $0.key < $1.key }) {
                audits[i].writersSeen.append(.init(stack: stack, store: path, transactions: counts.transactions, changes: counts.changes))
            }
            if entries.isEmpty && storeHasWriter(i) {
                findings.append(Finding(
                    id: "not-written", severity: .info, store: path, entity: rule.current,
                    message: "No transaction in the history wrote \(rule.current).",
                    explanation: "Nobody wrote this entity while history was kept; nothing to check against the policy.",
                    suggestion: nil))
            }
        }
        if let first = ledger.firstTransaction, first > 1 {
            findings.append(Finding(
                id: "history-trimmed", severity: .info, store: path, entity: nil,
                message: "History starts at transaction \(first): earlier transactions were deleted, so the writer evidence is partial.",
                evidence: ["firstTransaction": .int(Int(first))],
                explanation: "Apps delete old history once every process has read it; writes before that point cannot be attributed.",
                suggestion: nil))
        }
        return findings
    }

    /// Store entity name → rule index, for the entities whose side lives in the store at `path`.
    func ruleIndexes(store path: String, sidesByRule: [[SideSource]]) -> [String: Int] {
        var ruleOf: [String: Int] = [:]
        for (i, sides) in sidesByRule.enumerated() {
            for side in sides where side.storePath == path { ruleOf[side.entity] = i }
            // A shared store holds one entity for both stacks: also accept the legacy and current names.
            if sides.contains(where: { $0.storePath == path }) {
                for name in [manifest.entities[i].current, manifest.entities[i].legacy].compactMap({ $0 }) where ruleOf[name] == nil {
                    ruleOf[name] = i
                }
            }
        }
        return ruleOf
    }

    /// Reads the store's history once, attributing each transaction to a stack and tallying the
    /// writes the policy forbids: by a stack not the writer, after the cutover, by no stack.
    func writerLedger(store path: String, opened o: OpenedStore, stacks: [Manifest.Stack], ruleOf: [String: Int],
                      storeHasWriter: (Int) -> Bool) throws -> WriterLedger {
        let attribution = WriterAttribution(stacks: stacks)
        var ledger = WriterLedger()
        var reader = try HistoryReader(connection: o.connection, store: o.store, model: o.model, displayPath: path)
        try reader.forEachTransaction { t in
            ledger.firstTransaction = min(ledger.firstTransaction ?? t.id, t.id)
            // storelens's own repairs are recorded under this author: known, never a violation.
            let verdict: WriterAttribution.Verdict = t.author == "storelens-repair" ? .stack("storelens-repair") : attribution.attribute(t)
            let writerText = [("author", t.author), ("bundleID", t.bundleID), ("process", t.processName), ("context", t.contextName)]
                .compactMap { k, v in v.map { "\(k)=\($0)" } }.joined(separator: " ")
            var perRule: [Int: Int] = [:]
            for change in t.changes { if let i = ruleOf[change.entity] { perRule[i, default: 0] += 1 } }
            let stackName: String
            switch verdict {
            case .stack(let name): stackName = name
            case .unclaimed, .ambiguous:
                stackName = "unattributed"
                let key = writerText.isEmpty ? "(no writer values)" : writerText
                var v = ledger.unattributed[key] ?? WriteTally()
                v.add(t, changes: t.changes.count, limit: evidenceLimit)
                if case .ambiguous(let names) = verdict { v.values.insert("claimed equally by " + names.joined(separator: ", ")) }
                for i in perRule.keys { v.values.insert(manifest.entities[i].current) }
                ledger.unattributed[key] = v
            }
            for (i, changes) in perRule {
                ledger.seen[i, default: [:]][stackName, default: (0, 0)].transactions += 1
                ledger.seen[i, default: [:]][stackName, default: (0, 0)].changes += changes
                guard case .stack(let name) = verdict, name != manifest.entities[i].writer, name != "storelens-repair" else { continue }
                let key = "\(i)|\(name)"
                if storeHasWriter(i) {
                    var v = ledger.violations[key] ?? WriteTally()
                    v.add(t, changes: changes, limit: evidenceLimit)
                    if !writerText.isEmpty { v.values.insert(writerText) }
                    ledger.violations[key] = v
                }
                if let cutover = manifest.entities[i].cutover, let seconds = t.referenceSeconds,
                   seconds > cutover.timeIntervalSinceReferenceDate {
                    var v = ledger.afterCutover[key] ?? WriteTally()
                    v.add(t, changes: changes, limit: evidenceLimit)
                    ledger.afterCutover[key] = v
                }
            }
        }
        return ledger
    }

    /// The rule and the stack a "rule|stack" ledger key names.
    func ruleAndStack(_ key: String) -> (rule: Manifest.EntityRule, stack: String)? {
        let parts = key.split(separator: "|")
        guard let i = Int(parts[0]) else { return nil }
        return (manifest.entities[i], String(parts[1]))
    }

    /// The findings for the writes the policy forbids: a stack writing another's entity, a write
    /// after the cutover, a writer no stack claims.
    func policyFindings(_ ledger: WriterLedger, store path: String) -> [Finding] {
        var findings: [Finding] = []
        for (key, v) in ledger.violations.sorted(by: { $0.key < $1.key }) {
            guard let (rule, stack) = ruleAndStack(key) else { continue }
            findings.append(Finding(
                id: "writer-violation", severity: .error, store: path, entity: rule.current,
                message: "Stack \(stack) wrote \(rule.current) in \(plural(v.count, "transaction")) (\(plural(v.changes, "change"))), but only \(rule.writer) may write it.",
                evidence: ["stack": .string(stack), "transactions": .keys(v.transactions.map { Int($0) }, limit: evidenceLimit),
                           "transactionCount": .int(v.count), "changes": .int(v.changes),
                           "first": .string(v.first ?? "?"), "last": .string(v.last ?? "?"),
                           "writerValues": .list(v.values.sorted().map(EvidenceValue.string))],
                explanation: "Two stacks writing one entity is where records get lost, duplicated or silently overwritten during a migration.",
                suggestion: "Route \(stack)'s writes to \(rule.current) through \(rule.writer), or change the entity's writer in the manifest if the policy changed."))
        }
        for (key, v) in ledger.afterCutover.sorted(by: { $0.key < $1.key }) {
            guard let (rule, stack) = ruleAndStack(key) else { continue }
            findings.append(Finding(
                id: "write-after-cutover", severity: .error, store: path, entity: rule.current,
                message: "Stack \(stack) wrote \(rule.legacy ?? rule.current) \(plural(v.count, "time")) after the cutover.",
                evidence: ["stack": .string(stack), "transactions": .keys(v.transactions.map { Int($0) }, limit: evidenceLimit),
                           "transactionCount": .int(v.count), "first": .string(v.first ?? "?"), "last": .string(v.last ?? "?")],
                explanation: "After the cutover the legacy side is frozen; writes there are not migrated and are lost to the new stack.",
                suggestion: "Find the code path in \(stack) that still saves this entity and switch it off."))
        }
        for (values, v) in ledger.unattributed.sorted(by: { $0.key < $1.key }) {
            findings.append(Finding(
                id: "unattributed-write", severity: .warning, store: path, entity: nil,
                message: "\(plural(v.count, "transaction")) (\(v.changes) changes) came from a writer no stack claims: \(values).",
                evidence: ["writerValues": .string(values), "transactions": .keys(v.transactions.map { Int($0) }, limit: evidenceLimit),
                           "transactionCount": .int(v.count), "entities": .list(v.values.sorted().map(EvidenceValue.string))],
                explanation: "A process the manifest does not know wrote to the store (an extension, a background task, a test build).",
                suggestion: "Add its bundle id, process name, author or context name to the right stack's writers."))
        }
        return findings
    }
}
