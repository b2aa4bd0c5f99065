import Acquisition
import Foundation
import SQLiteAccess
import StoreFormats

/// The `-wal` of a store, summarised as `inspect` reports it.
public struct WALSummary: Equatable, Sendable {
    public let present: Bool
    /// Whole frames in the file, valid or not.
    public let frames: Int
    /// Frames SQLite would accept (the walk stops at the first bad one).
    public let validFrames: Int
    public let commits: Int
    /// mxFrame: the last commit frame; frames after it are an unfinished transaction.
    public let lastCommitFrame: Int
    public let pageSize: Int?
    public let salt1: UInt32?
    public let salt2: UInt32?
    public let checkpointSequence: UInt32?
    /// Why the walk stopped, or why the whole WAL is ignored.
    public let stopReason: String?

    public static let absent = WALSummary(present: false, frames: 0, validFrames: 0, commits: 0, lastCommitFrame: 0,
                                          pageSize: nil, salt1: nil, salt2: nil, checkpointSequence: nil, stopReason: nil)

    init(_ wal: WAL) {
        present = true
        frames = wal.totalFrameSlots
        validFrames = wal.validFrameCount
        commits = wal.commitFrames.count
        lastCommitFrame = wal.lastCommitFrame
        pageSize = wal.header?.pageSize
        salt1 = wal.header?.salt1
        salt2 = wal.header?.salt2
        checkpointSequence = wal.header?.checkpointSequence
        stopReason = wal.headerProblem.map { "\($0)" } ?? wal.stopReason.flatMap { $0 == .endOfFile ? nil : "\($0)" }
    }

    init(present: Bool, frames: Int, validFrames: Int, commits: Int, lastCommitFrame: Int, pageSize: Int?,
         salt1: UInt32?, salt2: UInt32?, checkpointSequence: UInt32?, stopReason: String?) {
        self.present = present; self.frames = frames; self.validFrames = validFrames; self.commits = commits
        self.lastCommitFrame = lastCommitFrame; self.pageSize = pageSize; self.salt1 = salt1; self.salt2 = salt2
        self.checkpointSequence = checkpointSequence; self.stopReason = stopReason
    }
}

/// Everything `inspect` says about one store.
public struct StoreInspection: Sendable {
    public enum Format: String, Sendable {
        case coreData = "coredata"
        case sqlite
    }

    /// One entity with its counts.
    public struct EntityReport: Sendable {
        public let entity: StoreEntity
        public let counts: EntityCounts
    }

    /// A table of a plain SQLite database, with its row count.
    public struct TableReport: Sendable {
        public let name: String
        /// 0 when the table cannot be read (see `unreadable`).
        public let rows: Int
        public let rowsMainFileOnly: Int?
        /// Why SQLite cannot read this table here (an FTS5 table with Apple's private tokenizer);
        /// nil when it was counted.
        public let unreadable: String?

        public init(name: String, rows: Int, rowsMainFileOnly: Int?, unreadable: String? = nil) {
            self.name = name
            self.rows = rows
            self.rowsMainFileOnly = rowsMainFileOnly
            self.unreadable = unreadable
        }
    }

    public let path: String
    public let format: Format
    public let stack: StackVerdict
    public let journalMode: String
    public let pageSize: Int
    public let sizeBytes: Int
    public let metadata: StoreMetadata?
    public let entities: [EntityReport]
    public let tables: [TableReport]
    public let wal: WALSummary
    public let history: HistorySummary?
    public let cloudKitTables: [String]
    public let notes: [String]
    /// The WAL commit this inspection shows (`--as-of`), nil for the latest state.
    public var asOfCommit: Int? = nil
    /// External binary storage: files that came in `_EXTERNAL_DATA` and values that name them.
    public var externalData: ExternalDataCensus? = nil
}

/// Reads a working copy into a `StoreInspection`.
public enum StoreInspector {
    /// - Parameter view: a view to read instead of the WAL-applied one (a point-in-time image for `--as-of`).
    /// - Parameter walTablesSound: the tables the `-wal` changed are known to pass SQLite's
    ///   `integrity_check(T)` in the WAL view (`check` compared every row with every index, its
    ///   `IntegrityOutcome.walTablesSound`): the quick comparison below could only find nothing
    ///   then, so it is skipped. Only for the WAL-applied view of this same copy.
    public static func inspect(_ copy: WorkingCopy, displayPath: String? = nil, view: Connection? = nil, asOfCommit: Int? = nil,
                               walTablesSound: Bool = false) throws -> StoreInspection {
        let path = displayPath ?? copy.displayPath
        let connection = try view ?? copy.open()
        let mainOnly = try copy.openMainFileOnly()
        do {
            var result = try inspect(copy: copy, path: path, connection: connection, mainOnly: mainOnly,
                                     walTablesSound: walTablesSound && view == nil)
            result.asOfCommit = asOfCommit
            return result
        } catch let error as SQLiteError {
            guard error.isCorrupt || error.isNotADatabase else { throw AcquisitionError.sqlite(error) }
            // A WAL view that cannot be read while the main file alone is sound: the pair is to blame.
            if view == nil, copy.family.wal != nil,
               let disagreement = WALAgreement.compare(walView: connection, mainOnly: mainOnly, full: false) {
                throw AcquisitionError.corrupt(path: path, detail: "SQLite: \(error.message); \(disagreement)")
            }
            throw AcquisitionError.corrupt(path: path, detail: "SQLite: \(error.message)")
        }
    }

    static func inspect(copy: WorkingCopy, path: String, connection: Connection, mainOnly: Connection, walTablesSound: Bool = false) throws -> StoreInspection {
        let size = (try? FileManager.default.attributesOfItem(atPath: copy.family.main.path)[.size] as? NSNumber)?.intValue ?? 0
        let journalMode = copy.header.isWALMode ? "wal" : (try connection.journalMode())
        let wal = copy.wal.map(WALSummary.init) ?? .absent
        var notes = copy.notes.map(\.description)
        if wal.present && wal.commits > 0 && !walTablesSound {
            // Only the tables the WAL changed, where the WAL changed them: cheap, and what a -wal
            // copied after a checkpoint the main file missed breaks (docs/inspect.md); `check`
            // compares every row.
            // For `make bench`: what the check of a -wal that may not belong costs.
            let stopwatch = Stopwatch()
            defer { Timings.process?.record("inspect-wal-agreement-seconds=\(stopwatch.seconds)") }
            let changed = WALAgreement.changedTables(walView: connection, mainOnly: mainOnly)
            let pages = copy.wal.flatMap { wal in copy.walData.map { WALPageAgreement.Pages(wal: wal, data: $0, header: copy.header, file: copy.walFile?.path) } }
            if !changed.isEmpty, let disagreement = WALAgreement.compare(walView: connection, mainOnly: mainOnly, tables: changed, walPages: pages) {
                notes.append("\(disagreement); the counts with the WAL are not to be trusted (see `storelens check`, and `--as-of 0` for the main file alone)")
            }
        }

        guard let store = try CoreDataStore.read(connection) else {
            // A plain SQLite database: report its tables, not reject it.
            var tables: [StoreInspection.TableReport] = []
            var notes = notes
            let mainTables = Set(try mainOnly.tableNames())
            for name in try connection.tableNames() where !name.hasPrefix("sqlite_") {
                let quoted = Identifier.quoted(name)
                // One table SQLite cannot read here (Photos' search index uses the private FTS5
                // tokenizer PSITokenizer) does not stop the others from being counted. Damage
                // still stops everything.
                switch countTable(quoted, connection: connection) {
                case .success(let rows):
                    let mainRows = mainTables.contains(name) ? try mainOnly.scalar("SELECT count(*) FROM \(quoted)").int : 0
                    tables.append(.init(name: name, rows: rows, rowsMainFileOnly: mainRows))
                case .failure(let error):
                    guard !(error.isCorrupt || error.isNotADatabase) else { throw error }
                    tables.append(.init(name: name, rows: 0, rowsMainFileOnly: nil, unreadable: error.message))
                    notes.append("table \(name) cannot be read by SQLite here (\(error.message)); its rows are not counted")
                }
            }
            return StoreInspection(path: path, format: .sqlite,
                                   stack: StackVerdict(stack: .unknown, evidence: ["no Z_PRIMARYKEY and Z_METADATA tables: not a Core Data store"]),
                                   journalMode: journalMode, pageSize: copy.header.pageSize, sizeBytes: size,
                                   metadata: nil, entities: [], tables: tables, wal: wal, history: nil,
                                   cloudKitTables: [], notes: notes)
        }

        var unreadable: [(table: String, reason: String)] = []
        var integerKeyTables = Set<String>()
        let counts = try store.countRows(connection, unreadable: &unreadable, integerKeyTables: &integerKeyTables)
        // The main file may predate entities or tables that only the WAL created.
        // (A main file SQLite cannot read is a fact about it; our own failing disk is not.)
        let mainStore = try WorkingFolderFailure.unlessOurs { try CoreDataStore.read(mainOnly) } ?? nil
        let mainCounts = try mainStore.map { try $0.countRows(mainOnly) } ?? [:]
        let entities = store.entities.map { entity -> StoreInspection.EntityReport in
            let own = counts[entity.number]?.count ?? 0
            let all = entity.subtreeNumbers.reduce(0) { $0 + (counts[$1]?.count ?? 0) }
            return .init(entity: entity, counts: EntityCounts(
                rows: own, rowsIncludingSubentities: all,
                rowsMainFileOnly: mainStore == nil ? nil : (mainCounts[entity.number]?.count ?? 0),
                maxPK: counts[entity.number]?.maxPK))
        }
        var coreDataNotes = notes
        for u in unreadable {
            coreDataNotes.append("table \(u.table) cannot be read by SQLite here (\(u.reason)); its rows are not counted")
        }
        for t in try store.textKeyRows(connection, provenClean: integerKeyTables) {
            coreDataNotes.append("\(t.table) holds \(plural(t.rows, "row")) whose Z_PK or Z_ENT is stored as text\(t.maxKey.map { " (keys up to '\($0)')" } ?? ""); Core Data matches none of them, so the entity counts above leave them out")
        }
        var inspection = StoreInspection(path: path, format: .coreData,
                                         stack: StackVerdict.judge(store: store),
                                         journalMode: journalMode, pageSize: copy.header.pageSize, sizeBytes: size,
                                         metadata: store.metadata, entities: entities, tables: [], wal: wal,
                                         history: store.history, cloudKitTables: store.cloudKitTables, notes: coreDataNotes)
        inspection.externalData = try ExternalDataCensus.take(copy, connection: connection, store: store)
        return inspection
    }
}

extension StoreInspector {
    static func countTable(_ quoted: String, connection: Connection) -> Result<Int, SQLiteError> {
        Result { () throws(SQLiteError) -> Int in try connection.scalar("SELECT count(*) FROM \(quoted)").int ?? 0 }
    }

    /// The external-data census of a working copy's store; nil for plain SQLite, or when the store
    /// has no external storage and no `_EXTERNAL_DATA` folder.
    public static func externalData(_ copy: WorkingCopy) throws -> ExternalDataCensus? {
        let connection = try copy.open()
        guard let store = try CoreDataStore.read(connection) else { return nil }
        return try ExternalDataCensus.take(copy, connection: connection, store: store)
    }

    /// Opens a working copy only far enough to say what it is: Core Data or plain SQLite, and
    /// which stack most likely wrote it. Used by `scan`, which must stay fast on many stores.
    public static func classify(_ copy: WorkingCopy) throws -> (format: StoreInspection.Format, stack: StackVerdict) {
        let connection = try copy.open()
        do {
            guard let store = try CoreDataStore.read(connection) else {
                return (.sqlite, StackVerdict(stack: .unknown, evidence: []))
            }
            return (.coreData, StackVerdict.judge(store: store))
        } catch let error as SQLiteError {
            throw error.isCorrupt || error.isNotADatabase
                ? AcquisitionError.corrupt(path: copy.displayPath, detail: "SQLite: \(error.message)")
                : AcquisitionError.sqlite(error)
        }
    }
}

extension WALSummary: WALWalkSummary {}
