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
