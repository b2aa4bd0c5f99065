import Findings

/// What `audit` found: per entity, the sides and the writers seen; and the findings.
public struct AuditResult: Sendable {
    public struct Side: Sendable {
        public let stack: String
        public let store: String
        /// The entity's name on this side.
        public let entity: String
        public let records: Int
    }

    public struct WriterSeen: Sendable {
        /// The stack the writes were attributed to, or "unattributed".
        public let stack: String
        public let store: String
        public var transactions: Int
        public var changes: Int
    }

    public struct EntityAudit: Sendable {
        public let current: String
        public let legacy: String?
        public let writer: String
        public var sides: [Side]
        public var writersSeen: [WriterSeen]
    }

    /// A stack and the store (or JSON file) it was bound to in the input.
    public struct Binding: Sendable {
        public let stack: String
        public let kind: String
        public let store: String?
    }

    public var bindings: [Binding]
    public var entities: [EntityAudit]
    public var findings: [Finding]
}

extension AuditResult {
    /// The ids of `lostRecords`, `doubledRecords` and `writerViolations`.
    public static let lostRecordIDs: Set<String> = ["not-migrated", "json-not-imported"]
    public static let doubledRecordIDs: Set<String> = ["duplicate-import"]
    public static let writerViolationIDs: Set<String> = ["writer-violation", "write-after-cutover", "unattributed-write"]

    /// Records the legacy side (a store or a JSON file) has and the writer's store lacks.
    public var lostRecords: [Finding] { findings.filter { Self.lostRecordIDs.contains($0.id) } }
    /// Records the writer's store holds more than once (an import that ran twice).
    public var doubledRecords: [Finding] { findings.filter { Self.doubledRecordIDs.contains($0.id) } }
    /// Writes by a stack that does not own the entity, after its cutover, or by no stack the
    /// manifest names: anything but "one writer".
    public var writerViolations: [Finding] { findings.filter { Self.writerViolationIDs.contains($0.id) } }
}
