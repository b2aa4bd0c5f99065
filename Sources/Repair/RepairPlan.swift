import Findings

/// What `repair` will do, before it does anything: every action, the check it answers, what it
/// touches and how many rows. `--plan` prints this and stops.
public struct RepairPlan: Sendable {
    public struct Action: Sendable {
        /// The action's name, e.g. `raise-z-max`.
        public let name: String
        /// The finding id it answers, e.g. `zmax-below-max-pk`.
        public let answers: String
        public let entity: String?
        /// Tables whose rows the action changes.
        public let tables: [String]
        public let summary: String
        /// The affected identifiers (first 20) and their count.
        public let affected: [String]
        public let count: Int
        /// The statements, run in order inside the repair's one transaction.
        let statements: [Statement]
    }

    /// One SQL statement with its bound arguments (identifiers already quoted).
    struct Statement: Sendable {
        let sql: String
        let arguments: [Int64]
    }

    public var actions: [Action]
    /// Findings no action answers (no automatic repair is safe for them).
    public var unrepaired: [Finding]

    public var isEmpty: Bool { actions.isEmpty }
    /// Finding ids the plan claims to fix.
    public var answered: Set<String> { Set(actions.map(\.answers)) }
    public var touchedTables: Set<String> { Set(actions.flatMap(\.tables)) }
}

/// Which row of a group of uniqueness duplicates to keep.
public enum KeepRule: String, Sendable, CaseIterable {
    /// The highest Z_OPT (most often saved), then the highest Z_PK (most recent). The default.
    case highestOpt = "highest-opt"
    /// The highest Z_PK: the most recently inserted.
    case newest
    /// The lowest Z_PK: the first inserted.
    case oldest
}
