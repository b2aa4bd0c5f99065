import Acquisition
import Checks
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

/// The coexistence audit: binds the manifest's stacks to the stores in an input, resolves every
/// entity's names on each side, attributes history transactions to stacks and checks them against
/// the one-writer-per-entity policy, and compares records across stores.
public struct Auditor {
    public let manifest: Manifest
    public let session: EvidenceSession
    public var openOptions = OpenOptions()
    public var limits = ArchiveLimits()
    /// Cap on the identifiers listed in one finding's evidence (the count is always given).
    public var evidenceLimit = 20
    /// What the caller has read of the inputs already (`report --manifest`): their inventories,
    /// made with `wantedFiles`, and the working copies it made, by store path. The audit then
    /// reads no input again; each evidence byte is read at most twice, as by every command.
    public var acquired: (inventories: [Inventory], copies: [String: WorkingCopy])?

    /// The files other than stores the manifest's JSON stacks need from the inputs.
    public var wantedFiles: [PathPattern] { manifest.stacks.filter { $0.kind == .json }.map { PathPattern($0.store) } }

    /// Whether a store at `path` may be bound to a stack, so a working copy will be made of it.
    public var mayBind: @Sendable (String) -> Bool {
        let patterns = manifest.stacks.filter { $0.kind != .json }.map { PathPattern($0.store) }
        return { path in patterns.contains { $0.matches(path, ignoringCase: true) } }
    }

    public init(manifest: Manifest, session: EvidenceSession) {
        self.manifest = manifest
        self.session = session
    }

    /// One side of an entity: where its records are and under which name.
    struct SideSource {
        let stack: Manifest.Stack
        let storePath: String
        let entity: String
        let opened: OpenedStore?
        let mapping: EntityMapping?
        let json: URL?
    }

    /// The stacks bound to stores in the input, each store opened once, each rule's sides.
    struct Prepared {
        var bindings: [AuditResult.Binding]
        var storeOf: [String: FoundStore]
        var opened: [String: OpenedStore]
        var copies: [String: WorkingCopy]
        var sidesByRule: [[SideSource]]
        var audits: [AuditResult.EntityAudit]
        var findings: [Finding]
    }

    func prepare(inputs: [String]) throws -> Prepared {
        let resolver = InputResolver(session: session, limits: limits, wanted: wantedFiles, stagesCopies: mayBind)
        var stores: [FoundStore] = []
        var others: [(path: String, url: URL)] = []
        for inventory in try acquired?.inventories ?? InputResolver.distinct(inputs).map({ try resolver.inventory(of: $0) }) {
            stores += inventory.stores
            others += inventory.otherFiles
        }
        var findings: [Finding] = []

        // 1. Bind stacks to stores.
        var bindings: [AuditResult.Binding] = []
        var storeOf: [String: FoundStore] = [:]
        var jsonOf: [String: (path: String, url: URL)] = [:]
        for (i, stack) in manifest.stacks.enumerated() {
            let pattern = PathPattern(stack.store)
            let candidates = stack.kind == .json ? others.map(\.path) : stores.map(\.path)
            let (matches, loosely) = Self.bind(pattern, in: candidates)
            try requireOne(matches, stack: stack, index: i)
            if let m = matches.first {
                if stack.kind == .json {
                    jsonOf[stack.name] = others.first { $0.path == m }
                } else {
                    storeOf[stack.name] = stores.first { $0.path == m }
                }
                if loosely {
                    findings.append(Finding(
                        id: "stack-store-case", severity: .info, store: m, entity: nil,
                        message: "Stack \(stack.name) was bound to \(m), which matches \(stack.store) only when letter case is ignored.",
                        evidence: ["stack": .string(stack.name), "pattern": .string(stack.store), "store": .string(m)],
                        explanation: "APFS and HFS+ volumes ignore case by default, so the app finds its store under either spelling; the match is unambiguous in this input.",
                        suggestion: "Write the path in the manifest as the container spells it."))
                }
            }
            bindings.append(.init(stack: stack.name, kind: stack.kind.rawValue, store: matches.first))
            if matches.isEmpty {
                let close = Self.closest(to: stack.store, in: candidates)
                findings.append(Finding(
                    id: "stack-store-missing", severity: .error, store: nil, entity: nil,
                    message: "No \(stack.kind == .json ? "file" : "store") in the input matches \(stack.store) for stack \(stack.name), so nothing of this stack was audited\(close.map { "; did you mean \($0)?" } ?? ".")",
                    evidence: ["stack": .string(stack.name), "pattern": .string(stack.store)].merging(close.map { ["closest": .string($0)] } ?? [:]) { a, _ in a },
                    explanation: "A stack bound to no store hides every finding about it: its side cannot be compared and its writes cannot be checked, so the audit cannot pass.",
                    suggestion: "Correct the store path in the manifest (`storelens scan` of the input lists every store's path)."))
            }
        }

        // 2. Open each bound store once (two stacks may share one file).
        var opened: [String: OpenedStore] = [:]
        var copies: [String: WorkingCopy] = [:]
        for found in Set(storeOf.values.map(\.path)).sorted() {
            guard let store = stores.first(where: { $0.path == found }) else { continue }
            let copy = try acquired?.copies[found] ?? session.workingCopy(of: store, options: openOptions)
            copies[found] = copy
            opened[found] = try OpenedStore.open(copy, displayPath: store.path)
        }

        // 3. Resolve each rule's sides.
        var audits: [AuditResult.EntityAudit] = []
        var sidesByRule: [[SideSource]] = []
        for (i, rule) in manifest.entities.enumerated() {
            var sides: [SideSource] = []
            for stack in manifest.stacks {
                if stack.kind == .json {
                    guard let file = jsonOf[stack.name], stack.entity == rule.current || stack.entity == rule.legacy else { continue }
                    sides.append(SideSource(stack: stack, storePath: file.path, entity: stack.entity ?? rule.current,
                                            opened: nil, mapping: nil, json: file.url))
                    continue
                }
                guard let found = storeOf[stack.name], let o = opened[found.path] else { continue }
                let preferLegacy = stack.name != rule.writer
                let names = preferLegacy ? [rule.legacy, rule.current] : [rule.current, rule.legacy]
                var mapping: EntityMapping?
                for name in names.compactMap({ $0 }) where mapping == nil {
                    mapping = o.map.entity(named: name)
                }
                if mapping == nil, let m = o.map.resolveEntity(preferLegacy ? (rule.legacy ?? rule.current) : rule.current) {
                    mapping = m
                }
                guard let mapping else { continue }
                // Two stacks on one store see the same entity: keep it once, under the writer's stack.
                if sides.contains(where: { $0.storePath == found.path && $0.entity == mapping.entity.name }) {
                    if stack.name == rule.writer, let k = sides.firstIndex(where: { $0.storePath == found.path && $0.entity == mapping.entity.name }) {
                        sides[k] = SideSource(stack: stack, storePath: found.path, entity: mapping.entity.name, opened: o, mapping: mapping, json: nil)
                    }
                    continue
                }
                sides.append(SideSource(stack: stack, storePath: found.path, entity: mapping.entity.name, opened: o, mapping: mapping, json: nil))
            }
            if sides.isEmpty && (!opened.isEmpty || !jsonOf.isEmpty) {
                let names = opened.values.flatMap { $0.map.entities.map(\.entity.name) }.sorted()
                throw ManifestError(path: manifest.path, line: rule.line, column: 1, field: "entities[\(i)].current",
                                    problem: "no store in the input has an entity named \"\(rule.current)\"\(rule.legacy.map { " or \"\($0)\"" } ?? "") (entities found: \(names.joined(separator: ", ")))")
            }
            findings += nameConflicts(rule: rule, sides: sides)
            sidesByRule.append(sides)
            audits.append(.init(current: rule.current, legacy: rule.legacy, writer: rule.writer, sides: [], writersSeen: []))
        }
        return Prepared(bindings: bindings, storeOf: storeOf, opened: opened, copies: copies,
                        sidesByRule: sidesByRule, audits: audits, findings: findings)
    }

    public func run(inputs: [String]) throws -> AuditResult {
        let prepared = try prepare(inputs: inputs)
        var findings = prepared.findings
        var audits = prepared.audits
        let (bindings, storeOf, opened, copies, sidesByRule) = (prepared.bindings, prepared.storeOf, prepared.opened, prepared.copies, prepared.sidesByRule)

        // 4. Writers seen in history, per store, against the policy.
        for (path, o) in opened.sorted(by: { $0.key < $1.key }) {
            let stacksHere = manifest.stacks.filter { storeOf[$0.name]?.path == path }
            findings += try auditWriters(store: path, opened: o, stacks: stacksHere, sidesByRule: sidesByRule, audits: &audits)
            // The integrity checks run on every bound store: audit is the one command for a migration.
            let checker = copies[path].map { StoreChecker(opened: o, copy: $0) } ?? StoreChecker(opened: o)
            findings += try checker.run()
        }

        // 5. Records across sides.
        for (i, rule) in manifest.entities.enumerated() {
            let (sides, more) = try compareRecords(rule: rule, sides: sidesByRule[i])
            audits[i].sides = sides
            findings += more
        }
        return AuditResult(bindings: bindings, entities: audits, findings: findings.bySeverity)
    }

    /// The paths `pattern` binds: an exact match in one Unicode form first; failing that, a match
    /// ignoring case, as a case-insensitive APFS volume resolves it, but only when it names one
    /// path (two paths differing only in case are two files, and guessing between them is not ours).
    static func bind(_ pattern: PathPattern, in paths: [String]) -> (matches: [String], loosely: Bool) {
        let exact = paths.filter { pattern.matches($0) }
        if !exact.isEmpty { return (exact, false) }
        let folded = paths.filter { pattern.matches($0, ignoringCase: true) }
        return folded.count == 1 ? (folded, true) : ([], false)
    }

    /// The candidate path closest to what the manifest typed, for "did you mean": compared on the
    /// same number of trailing components, case- and form-folded, within a third of its length.
    static func closest(to typed: String, in paths: [String]) -> String? {
        let want = Array(typed.precomposedStringWithCanonicalMapping.lowercased())
        // Bounded: the manifest and the paths come from outside, and the distance is quadratic.
        guard want.count <= EditDistance.maximumLength, paths.count <= 100_000 else { return nil }
        let depth = typed.split(separator: "/").count
        var best: (path: String, distance: Int)?
        for path in paths {
            let inside = path.split(separator: "!").last.map(String.init) ?? path
            let tail = inside.split(separator: "/").suffix(depth).joined(separator: "/")
            let have = Array(tail.precomposedStringWithCanonicalMapping.lowercased())
            guard let d = EditDistance.between(want, have) else { continue }
            if d <= max(2, want.count / 3), d < (best?.distance ?? .max) { best = (path, d) }
        }
        return best?.path
    }

    private func requireOne(_ matches: [String], stack: Manifest.Stack, index: Int) throws {
        guard matches.count > 1 else { return }
        throw ManifestError(path: manifest.path, line: stack.line, column: 1, field: "stacks[\(index)].store",
                            problem: "\"\(stack.store)\" matches \(matches.count) stores (\(matches.prefix(5).joined(separator: ", "))); make the path more specific")
    }

    // MARK: - Names

    /// The manifest wins over renaming identifiers in the cached model; disagreements are findings.
    func nameConflicts(rule: Manifest.EntityRule, sides: [SideSource]) -> [Finding] {
        var result: [Finding] = []
        for side in sides where side.stack.name == rule.writer {
            guard let mapping = side.mapping, let opened = side.opened else { continue }
            if let legacy = rule.legacy, let modelLegacy = mapping.entity.legacyName, modelLegacy != legacy {
                result.append(Finding(
                    id: "name-conflict", severity: .warning, store: side.storePath, entity: rule.current,
                    message: "The manifest says \(rule.current) was \(legacy), but the store's model renamed it from \(modelLegacy).",
                    evidence: ["manifest": .string(legacy), "renamingIdentifier": .string(modelLegacy), "model": .string(opened.model.source.rawValue)],
                    explanation: "The manifest's name is used; a model that disagrees may migrate the legacy entity under another name.",
                    suggestion: "Correct the manifest or the model's renaming identifier so both say the same."))
            }
            for (legacyAttribute, current) in rule.attributes.sorted(by: { $0.key < $1.key }) {
                guard let a = mapping.attribute(named: current) else {
                    result.append(Finding(
                        id: "unknown-attribute", severity: .warning, store: side.storePath, entity: rule.current,
                        message: "The manifest maps \(legacyAttribute) to \(current), but \(rule.current) has no attribute \(current).",
                        evidence: ["attribute": .string(current)],
                        explanation: "Values of this attribute cannot be compared across stacks.",
                        suggestion: "Fix the attribute name in the manifest."))
                    continue
                }
                if let modelLegacy = a.attribute.legacyName, modelLegacy != legacyAttribute {
                    result.append(Finding(
                        id: "name-conflict", severity: .warning, store: side.storePath, entity: rule.current,
                        message: "The manifest says \(rule.current).\(current) was \(legacyAttribute), but the model renamed it from \(modelLegacy).",
                        evidence: ["manifest": .string(legacyAttribute), "renamingIdentifier": .string(modelLegacy)],
                        explanation: "The manifest's name is used for comparing records.",
                        suggestion: "Make the manifest and the model's renaming identifier agree."))
                }
            }
        }
        return result
    }

    // MARK: - Writers

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
        // Store entity name → rule index, for entities whose side lives in this store.
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
        let attribution = WriterAttribution(stacks: stacks)
        let storeHasWriter: (Int) -> Bool = { i in stacks.contains { $0.name == self.manifest.entities[i].writer } }

        struct Violation { var transactions: [Int64] = []; var count = 0; var changes = 0; var first: String?; var last: String?; var values: Set<String> = [] }
        var violations: [String: Violation] = [:]        // "rule|stack"
        var afterCutover: [String: Violation] = [:]      // "rule|stack"
        var unattributed: [String: Violation] = [:]      // writer values
        var seen: [Int: [String: (transactions: Int, changes: Int)]] = [:]
        var firstTransaction: Int64?

        var reader = try HistoryReader(connection: o.connection, store: o.store, model: o.model, displayPath: path)
        try reader.forEachTransaction { t in
            firstTransaction = min(firstTransaction ?? t.id, t.id)
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
                var v = unattributed[key] ?? Violation()
                v.count += 1; v.changes += t.changes.count
                if v.transactions.count < evidenceLimit { v.transactions.append(t.id) }
                v.first = v.first ?? t.timestamp; v.last = t.timestamp
                if case .ambiguous(let names) = verdict { v.values.insert("claimed equally by " + names.joined(separator: ", ")) }
                for i in perRule.keys { v.values.insert(manifest.entities[i].current) }
                unattributed[key] = v
            }
            for (i, changes) in perRule {
                seen[i, default: [:]][stackName, default: (0, 0)].transactions += 1
                seen[i, default: [:]][stackName, default: (0, 0)].changes += changes
                guard case .stack(let name) = verdict, name != manifest.entities[i].writer, name != "storelens-repair" else { continue }
                let key = "\(i)|\(name)"
                if storeHasWriter(i) {
                    var v = violations[key] ?? Violation()
                    v.count += 1; v.changes += changes
                    if v.transactions.count < evidenceLimit { v.transactions.append(t.id) }
                    v.first = v.first ?? t.timestamp; v.last = t.timestamp
                    if !writerText.isEmpty { v.values.insert(writerText) }
                    violations[key] = v
                }
                if let cutover = manifest.entities[i].cutover, let seconds = t.referenceSeconds,
                   seconds > cutover.timeIntervalSinceReferenceDate {
                    var v = afterCutover[key] ?? Violation()
                    v.count += 1; v.changes += changes
                    if v.transactions.count < evidenceLimit { v.transactions.append(t.id) }
                    v.first = v.first ?? t.timestamp; v.last = t.timestamp
                    afterCutover[key] = v
                }
            }
        }

        var findings: [Finding] = []
        for (key, v) in violations.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "|")
            guard let i = Int(parts[0]) else { continue }
            let rule = manifest.entities[i], stack = String(parts[1])
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
        for (key, v) in afterCutover.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "|")
            guard let i = Int(parts[0]) else { continue }
            let rule = manifest.entities[i], stack = String(parts[1])
            findings.append(Finding(
                id: "write-after-cutover", severity: .error, store: path, entity: rule.current,
                message: "Stack \(stack) wrote \(rule.legacy ?? rule.current) \(plural(v.count, "time")) after the cutover.",
                evidence: ["stack": .string(stack), "transactions": .keys(v.transactions.map { Int($0) }, limit: evidenceLimit),
                           "transactionCount": .int(v.count), "first": .string(v.first ?? "?"), "last": .string(v.last ?? "?")],
                explanation: "After the cutover the legacy side is frozen; writes there are not migrated and are lost to the new stack.",
                suggestion: "Find the code path in \(stack) that still saves this entity and switch it off."))
        }
        for (values, v) in unattributed.sorted(by: { $0.key < $1.key }) {
            findings.append(Finding(
                id: "unattributed-write", severity: .warning, store: path, entity: nil,
                message: "\(plural(v.count, "transaction")) (\(v.changes) changes) came from a writer no stack claims: \(values).",
                evidence: ["writerValues": .string(values), "transactions": .keys(v.transactions.map { Int($0) }, limit: evidenceLimit),
                           "transactionCount": .int(v.count), "entities": .list(v.values.sorted().map(EvidenceValue.string))],
                explanation: "A process the manifest does not know wrote to the store (an extension, a background task, a test build).",
                suggestion: "Add its bundle id, process name, author or context name to the right stack's writers."))
        }
        for (i, rule) in manifest.entities.enumerated() where sidesByRule[i].contains(where: { $0.storePath == path && $0.json == nil }) {
            let entries = seen[i] ?? [:]
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
        if let first = firstTransaction, first > 1 {
            findings.append(Finding(
                id: "history-trimmed", severity: .info, store: path, entity: nil,
                message: "History starts at transaction \(first): earlier transactions were deleted, so the writer evidence is partial.",
                evidence: ["firstTransaction": .int(Int(first))],
                explanation: "Apps delete old history once every process has read it; writes before that point cannot be attributed.",
                suggestion: nil))
        }
        return findings
    }

    // MARK: - Records

    struct SideRecords {
        var byKey: [String: [(pk: String, values: [String: String?])]] = [:]
        var count = 0
    }

    func compareRecords(rule: Manifest.EntityRule, sides: [SideSource]) throws -> ([AuditResult.Side], [Finding]) {
        guard let writerSide = sides.first(where: { $0.stack.name == rule.writer }) ?? sides.first else { return ([], []) }
        // Attribute types from the writer's model decide how JSON values are read.
        let types: [String: ModelAttributeType] = Dictionary(
            (writerSide.mapping?.attributes ?? []).map { ($0.attribute.name, $0.attribute.type) }, uniquingKeysWith: { a, _ in a })
        let compared = (writerSide.mapping?.attributes ?? []).map(\.attribute.name).filter { !rule.identity.contains($0) }
        var records: [String: SideRecords] = [:]
        var result: [AuditResult.Side] = []
        for side in sides {
            let recordsHere = try read(side: side, rule: rule, isWriter: side.stack.name == writerSide.stack.name,
                                       attributes: compared, types: types)
            records[side.stack.name + "|" + side.storePath] = recordsHere
            result.append(.init(stack: side.stack.name, store: side.storePath, entity: side.entity, records: recordsHere.count))
        }
        guard sides.count > 1 else { return (result, []) }
        var findings: [Finding] = []
        let writerRecords = records[writerSide.stack.name + "|" + writerSide.storePath] ?? SideRecords()

        if !rule.identity.isEmpty {
            let duplicates = writerRecords.byKey.filter { $0.value.count > 1 }.sorted { $0.key < $1.key }
            if !duplicates.isEmpty {
                findings.append(Finding(
                    id: "duplicate-import", severity: .error, store: writerSide.storePath, entity: rule.current,
                    message: "\(plural(duplicates.count, "record")) of \(rule.current) exist\(duplicates.count == 1 ? "s" : "") more than once by identity (\(rule.identity.joined(separator: ", "))).",
                    evidence: ["count": .int(duplicates.count),
                               "records": .list(duplicates.prefix(evidenceLimit).map { .record([("identity", .string($0.key)), ("pks", .list($0.value.map { .string($0.pk) }))]) })],
                    explanation: "An import that ran twice (or two stacks inserting the same record) leaves duplicates that users see twice.",
                    suggestion: "Remove the extra copies, keeping the most recently updated one: `storelens repair --manifest` does this."))
            }
        }
        for side in sides where !(side.stack.name == writerSide.stack.name && side.storePath == writerSide.storePath) {
            let other = records[side.stack.name + "|" + side.storePath] ?? SideRecords()
            let sameKind = side.stack.kind == writerSide.stack.kind
            guard !rule.identity.isEmpty else {
                if other.count != writerRecords.count {
                    findings.append(Finding(
                        id: "count-mismatch", severity: .info, store: side.storePath, entity: rule.current,
                        message: "\(side.stack.name) has \(other.count) records of \(side.entity); \(writerSide.stack.name) has \(writerRecords.count) of \(rule.current).",
                        evidence: ["\(side.stack.name)": .int(other.count), "\(writerSide.stack.name)": .int(writerRecords.count)],
                        explanation: "Without identity attributes in the manifest, records can only be counted, not matched.",
                        suggestion: "Add \"identity\" to the entity's rule so missing and duplicated records can be named."))
                }
                continue
            }
            let missing = other.byKey.keys.filter { writerRecords.byKey[$0] == nil }.sorted()
            let extra = writerRecords.byKey.keys.filter { other.byKey[$0] == nil }.sorted()
            if !missing.isEmpty {
                let id = side.json != nil ? "json-not-imported" : sameKind ? "copy-diverged" : "not-migrated"
                let what = side.json != nil ? "the legacy JSON file" : "\(side.stack.name)"
                findings.append(Finding(
                    id: id, severity: sameKind ? .warning : .error, store: side.storePath, entity: rule.current,
                    message: "\(plural(missing.count, "record")) of \(side.entity) in \(what) \(missing.count == 1 ? "is" : "are") missing from \(writerSide.stack.name)'s \(rule.current).",
                    evidence: ["count": .int(missing.count), "identities": .list(missing.prefix(evidenceLimit).map(EvidenceValue.string)),
                               "pks": .list(missing.prefix(evidenceLimit).compactMap { other.byKey[$0]?.first?.pk }.map(EvidenceValue.string))],
                    explanation: sameKind
                        ? "Two copies of one store have drifted apart: each holds records the other lacks."
                        : "These records were never migrated: after the legacy side is removed, users lose them.",
                    suggestion: sameKind ? "Decide which copy is authoritative and stop writing the other." : "Import the missing records: `storelens repair --manifest` does this."))
            }
            if !extra.isEmpty && sameKind {
                findings.append(Finding(
                    id: "copy-diverged", severity: .warning, store: writerSide.storePath, entity: rule.current,
                    message: "\(plural(extra.count, "record")) of \(rule.current) in \(writerSide.stack.name) \(extra.count == 1 ? "is" : "are") missing from \(side.stack.name).",
                    evidence: ["count": .int(extra.count), "identities": .list(extra.prefix(evidenceLimit).map(EvidenceValue.string))],
                    explanation: "Two copies of one store have drifted apart.",
                    suggestion: "Decide which copy is authoritative and stop writing the other."))
            }
            // Values of records present on both sides, compared through the attribute renames.
            var differing: [EvidenceValue] = []
            var differingCount = 0
            var differingAttributes = Set<String>()
            for key in other.byKey.keys.sorted() {
                guard let theirs = other.byKey[key]?.first, let ours = writerRecords.byKey[key]?.first else { continue }
                var diffs: [(String, EvidenceValue)] = []
                for attribute in compared {
                    guard let theirValue = theirs.values[attribute], let ourValue = ours.values[attribute] else { continue }
                    if theirValue != ourValue {
                        diffs.append((attribute, .string("\(theirValue ?? "null") → \(ourValue ?? "null")")))
                        differingAttributes.insert(attribute)
                    }
                }
                if !diffs.isEmpty {
                    differingCount += 1
                    if differing.count < evidenceLimit { differing.append(.record([("identity", .string(key))] + diffs)) }
                }
            }
            if differingCount > 0 {
                findings.append(Finding(
                    id: "value-mismatch", severity: .warning, store: side.storePath, entity: rule.current,
                    message: "\(plural(differingCount, "record")) of \(rule.current) differ between \(side.stack.name) and \(writerSide.stack.name) in \(differingAttributes.sorted().joined(separator: ", ")).",
                    evidence: ["count": .int(differingCount), "records": .list(differing)],
                    explanation: "The same record carries different values on the two sides: one side was edited after the migration, or the import mapped a value wrongly.",
                    suggestion: "Check which side is right; if the legacy side is still being written, see writer-violation and write-after-cutover."))
            }
        }
        return (result, findings)
    }

    /// Reads one side's records: identity key → primary key and the compared attributes (current
    /// names), values in canonical form.
    /// A legacy value as read, kept for importing it (`repair --manifest`).
    enum RawValue {
        case field(FieldValue)
        case json(PositionedJSON)
    }

    func read(side: SideSource, rule: Manifest.EntityRule, isWriter: Bool, attributes: [String],
              types: [String: ModelAttributeType],
              visit: ((_ key: String, _ raw: [String: RawValue]) -> Void)? = nil) throws -> SideRecords {
        var result = SideRecords()
        // The other side uses legacy attribute names unless it is the same kind of stack (a copy).
        func nameHere(_ current: String) -> String { isWriter ? current : rule.legacyAttribute(for: current) }
        if let url = side.json {
            // Bounded before reading: the file comes from the device.
            let size = ((try? FileManager.default.attributesOfItem(atPath: url.path))?[.size] as? NSNumber)?.intValue ?? 0
            guard size <= 64 << 20 else {
                throw ManifestError(path: side.storePath, line: 0, column: 0, field: "", problem: "the legacy JSON file is \(size) bytes, above the 64 MiB storelens reads")
            }
            guard let text = String(data: try Data(contentsOf: url), encoding: .utf8) else {
                throw ManifestError(path: side.storePath, line: 0, column: 0, field: "", problem: "the legacy JSON file is not UTF-8 text")
            }
            let root: PositionedJSON
            do { root = try PositionedJSON.parse(text, maxBytes: 64 << 20) } catch let e as PositionedJSON.SyntaxError {
                throw ManifestError(path: side.storePath, line: e.position.line, column: e.position.column, field: "", problem: "the legacy JSON file is not valid JSON: \(e.message)")
            }
            var items: [PositionedJSON] = []
            if case .array(let a, _) = root { items = a }
            else if case .object(let members, _) = root, let first = members.first(where: { if case .array = $0.value { return true }; return false }),
                    case .array(let a, _) = first.value { items = a }
            for (n, item) in items.enumerated() {
                guard case .object(let members, _) = item else { continue }
                let fields = Dictionary(members.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
                let key = rule.identity.map { id in fields[nameHere(id)].flatMap { RecordValue.canonical(json: $0, as: types[id]) } ?? "null" }.joined(separator: "|")
                var values: [String: String?] = [:]
                for a in attributes { if let v = fields[nameHere(a)] { values[a] = RecordValue.canonical(json: v, as: types[a]) } }
                if let visit {
                    var raw: [String: RawValue] = [:]
                    for a in attributes + rule.identity { if let v = fields[nameHere(a)] { raw[a] = .json(v) } }
                    visit(key, raw)
                }
                result.byKey[key, default: []].append((pk: "#\(n + 1)", values: values))
                result.count += 1
            }
            return result
        }
        guard let opened = side.opened, let mapping = side.mapping else { return result }
        let reader = RowReader(map: opened.map, entity: mapping, decoder: opened.decoder)
        try reader.forEach(opened.connection) { row in
            let fields = Dictionary(row.values.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a })
            func value(_ current: String) -> FieldValue? {
                fields[nameHere(current)] ?? fields[current]
            }
            let key = rule.identity.map { id in value(id).flatMap(RecordValue.canonical) ?? "null" }.joined(separator: "|")
            var values: [String: String?] = [:]
            for a in attributes { if let v = value(a) { values[a] = RecordValue.canonical(v) } }
            if let visit {
                var raw: [String: RawValue] = [:]
                for a in attributes + rule.identity { if let v = value(a) { raw[a] = .field(v) } }
                visit(key, raw)
            }
            result.byKey[key, default: []].append((pk: "\(row.entity)#\(row.pk)", values: values))
            result.count += 1
        }
        return result
    }
}
