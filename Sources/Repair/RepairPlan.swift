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
        /// Counts the output must show afterwards (for repairs no check re-finds, such as imports).
        public let postconditions: [Postcondition]
        /// Relationship columns (`TABLE.COLUMN`) whose values the action may change. Verification
        /// proves every other relationship column kept its values.
        public let columns: [String]
        /// Tables the action may delete rows from. Verification proves no other table lost a row.
        public let deletesFrom: [String]

        public init(name: String, answers: String, entity: String?, tables: [String], summary: String,
                    affected: [String], count: Int, statements: [Statement], postconditions: [Postcondition] = [],
                    columns: [String] = [], deletesFrom: [String] = []) {
            self.columns = columns
            self.deletesFrom = deletesFrom
            self.name = name
            self.answers = answers
            self.entity = entity
            self.tables = tables
            self.summary = summary
            self.affected = affected
            self.count = count
            self.statements = statements
            self.postconditions = postconditions
        }
    }

    /// One SQL statement with its bound arguments (identifiers already quoted).
    public struct Statement: Sendable {
        let sql: String
        let arguments: [Value]

        /// A bound value: statements never interpolate values from a device.
        public enum Value: Sendable {
            case null, integer(Int64), real(Double), text(String), blob([UInt8])
        }

        public init(sql: String, arguments: [Value]) {
            self.sql = sql
            self.arguments = arguments
        }

        /// Whether the statement writes the store's own rows (not the repair's temporary tables),
        /// so its changes count as the action's.
        var writesStoreRows: Bool {
            !(sql.hasPrefix("CREATE TEMP") || sql.hasPrefix("DELETE FROM storelens_") || sql.hasPrefix("INSERT INTO storelens_"))
        }

        init(sql: String, integers: [Int64]) {
            self.sql = sql
            self.arguments = integers.map { .integer($0) }
        }
    }

    /// `SELECT count(*) …` must return `expected` on the repaired store.
    public struct Postcondition: Sendable {
        public let description: String
        let sql: String
        let arguments: [Statement.Value]
        let expected: Int

        public init(_ description: String, sql: String, arguments: [Statement.Value] = [], expected: Int) {
            self.description = description
            self.sql = sql
            self.arguments = arguments
            self.expected = expected
        }
    }

    public init(actions: [Action], unrepaired: [Finding], notes: [String] = []) {
        self.actions = actions
        self.unrepaired = unrepaired
        self.notes = notes
    }

    public var actions: [Action]
    /// Findings no action answers (no automatic repair is safe for them).
    public var unrepaired: [Finding]
    /// Why the planner left something out that a check found (one sentence each).
    public var notes: [String]
    /// Derived attributes (`Entity.attribute = derivation`) whose `Z_DA_` triggers sit on tables
    /// the plan writes. The repair runs with triggers off (they call functions only Core Data
    /// registers), so these columns are left as they are and the app recomputes them.
    public var derivedNotRecomputed: [String] = []

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
