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
        let resolver = InputResolver(session: session, limits: limits, wanted: wantedFiles, stagesCopies: mayBind, open: openOptions)
        var stores: [FoundStore] = []
        var others: [(path: String, url: URL)] = []
        var damage: [String: String] = [:]
        for inventory in try acquired?.inventories ?? InputResolver.distinct(inputs).map({ try resolver.inventory(of: $0) }) {
            stores += inventory.stores
            others += inventory.otherFiles
            if let detail = inventory.damage { damage[inventory.input] = detail }
        }
        // The damage policy every command applies (a caller that acquired the inputs applied it).
        if acquired == nil { try session.admit(damage: damage, anythingFound: !stores.isEmpty || !others.isEmpty, limits: limits) }
        // 1. Bind stacks to stores.
        let bound = try bindStacks(stores: stores, others: others)
        var findings = bound.findings

        // 2. Open each bound store once (two stacks may share one file).
        let (opened, copies) = try openBoundStores(bound.storeOf, stores: stores)

        // 3. Resolve each rule's sides.
        var audits: [AuditResult.EntityAudit] = []
        var sidesByRule: [[SideSource]] = []
        for (i, rule) in manifest.entities.enumerated() {
            let sides = self.sides(of: rule, bound: bound, opened: opened)
            if sides.isEmpty && (!opened.isEmpty || !bound.jsonOf.isEmpty) {
                let names = opened.values.flatMap { $0.map.entities.map(\.entity.name) }.sorted()
                throw ManifestError(path: manifest.path, line: rule.line, column: 1, field: "entities[\(i)].current",
                                    problem: "no store in the input has an entity named \"\(rule.current)\"\(rule.legacy.map { " or \"\($0)\"" } ?? "") (entities found: \(names.joined(separator: ", ")))")
            }
            findings += nameConflicts(rule: rule, sides: sides)
            sidesByRule.append(sides)
            audits.append(.init(current: rule.current, legacy: rule.legacy, writer: rule.writer, sides: [], writersSeen: []))
        }
        return Prepared(bindings: bound.bindings, storeOf: bound.storeOf, opened: opened, copies: copies,
                        sidesByRule: sidesByRule, audits: audits, findings: findings)
    }

    /// The manifest's stacks bound to the input's files: a store for a Core Data or SwiftData
    /// stack, a file for a JSON one; with findings for a binding made ignoring case and a stack
    /// bound to nothing.
    struct StackBindings {
        var bindings: [AuditResult.Binding] = []
        var storeOf: [String: FoundStore] = [:]
        var jsonOf: [String: (path: String, url: URL)] = [:]
        var findings: [Finding] = []
    }

    /// Binds each stack to the one store (or file) its path pattern matches.
    func bindStacks(stores: [FoundStore], others: [(path: String, url: URL)]) throws -> StackBindings {
        var bound = StackBindings()
        for (i, stack) in manifest.stacks.enumerated() {
            let pattern = PathPattern(stack.store)
            let candidates = stack.kind == .json ? others.map(\.path) : stores.map(\.path)
            let (matches, loosely) = Self.bind(pattern, in: candidates)
            try requireOne(matches, stack: stack, index: i)
            if let m = matches.first {
                if stack.kind == .json {
                    bound.jsonOf[stack.name] = others.first { $0.path == m }
                } else {
                    bound.storeOf[stack.name] = stores.first { $0.path == m }
                }
                if loosely { bound.findings.append(Self.boundIgnoringCase(stack, to: m)) }
            }
            bound.bindings.append(.init(stack: stack.name, kind: stack.kind.rawValue, store: matches.first))
            if matches.isEmpty { bound.findings.append(Self.unbound(stack, candidates: candidates)) }
        }
        return bound
    }

    /// The finding for a stack bound to a path that matches its pattern only ignoring case.
    static func boundIgnoringCase(_ stack: Manifest.Stack, to m: String) -> Finding {
        Finding(
            id: "stack-store-case", severity: .info, store: m, entity: nil,
            message: "Stack \(stack.name) was bound to \(m), which matches \(stack.store) only when letter case is ignored.",
            evidence: ["stack": .string(stack.name), "pattern": .string(stack.store), "store": .string(m)],
            explanation: "APFS and HFS+ volumes ignore case by default, so the app finds its store under either spelling; the match is unambiguous in this input.",
            suggestion: "Write the path in the manifest as the container spells it.")
    }

    /// The finding for a stack no store (or file) in the input matches, with the closest path.
    static func unbound(_ stack: Manifest.Stack, candidates: [String]) -> Finding {
        let close = closest(to: stack.store, in: candidates)
        return Finding(
            id: "stack-store-missing", severity: .error, store: nil, entity: nil,
            message: "No \(stack.kind == .json ? "file" : "store") in the input matches \(stack.store) for stack \(stack.name), so nothing of this stack was audited\(close.map { "; did you mean \($0)?" } ?? ".")",
            evidence: ["stack": .string(stack.name), "pattern": .string(stack.store)].merging(close.map { ["closest": .string($0)] } ?? [:]) { a, _ in a },
            explanation: "A stack bound to no store hides every finding about it: its side cannot be compared and its writes cannot be checked, so the audit cannot pass.",
            suggestion: "Correct the store path in the manifest (`storelens scan` of the input lists every store's path).")
    }

    /// Each bound store copied (unless the caller already did) and opened, once: two stacks may share one file.
    func openBoundStores(_ storeOf: [String: FoundStore], stores: [FoundStore]) throws -> (opened: [String: OpenedStore], copies: [String: WorkingCopy]) {
        var opened: [String: OpenedStore] = [:]
        var copies: [String: WorkingCopy] = [:]
        for found in Set(storeOf.values.map(\.path)).sorted() {
            guard let store = stores.first(where: { $0.path == found }) else { continue }
            let copy = try acquired?.copies[found] ?? session.workingCopy(of: store, options: openOptions)
            copies[found] = copy
            opened[found] = try OpenedStore.open(copy, displayPath: store.path)
        }
        return (opened, copies)
    }

    /// Where one rule's records are, stack by stack: a JSON stack's file, or the entity its
    /// store holds under the current or legacy name (the writer's stack prefers the current).
    func sides(of rule: Manifest.EntityRule, bound: StackBindings, opened: [String: OpenedStore]) -> [SideSource] {
        var sides: [SideSource] = []
        for stack in manifest.stacks {
            if stack.kind == .json {
                guard let file = bound.jsonOf[stack.name], stack.entity == rule.current || stack.entity == rule.legacy else { continue }
                sides.append(SideSource(stack: stack, storePath: file.path, entity: stack.entity ?? rule.current,
                                        opened: nil, mapping: nil, json: file.url))
                continue
            }
            guard let found = bound.storeOf[stack.name], let o = opened[found.path],
                  let mapping = Self.mapping(of: rule, preferLegacy: stack.name != rule.writer, in: o) else { continue }
            // Two stacks on one store see the same entity: keep it once, under the writer's stack.
            if sides.contains(where: { $0.storePath == found.path && $0.entity == mapping.entity.name }) {
                if stack.name == rule.writer, let k = sides.firstIndex(where: { $0.storePath == found.path && $0.entity == mapping.entity.name }) {
                    sides[k] = SideSource(stack: stack, storePath: found.path, entity: mapping.entity.name, opened: o, mapping: mapping, json: nil)
                }
                continue
            }
            sides.append(SideSource(stack: stack, storePath: found.path, entity: mapping.entity.name, opened: o, mapping: mapping, json: nil))
        }
        return sides
    }

    /// The rule's entity in one store: by its exact legacy or current name (a legacy stack tries
    /// the legacy name first), else as the schema map resolves the name.
    static func mapping(of rule: Manifest.EntityRule, preferLegacy: Bool, in o: OpenedStore) -> EntityMapping? {
        let names = preferLegacy ? [rule.legacy, rule.current] : [rule.current, rule.legacy]
        var mapping: EntityMapping?
        for name in names.compactMap({ $0 }) where mapping == nil {
            mapping = o.map.entity(named: name)
        }
        if mapping == nil, let m = o.map.resolveEntity(preferLegacy ? (rule.legacy ?? rule.current) : rule.current) {
            mapping = m
        }
        return mapping
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
}
