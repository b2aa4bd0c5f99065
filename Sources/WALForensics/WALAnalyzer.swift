import Acquisition
import CoreDataStore
import Findings
import Foundation
import SQLiteAccess
import StoreFormats

/// Works out a `WALAnalysis` from a store's evidence: the WAL's frames and
/// transactions, which tables each transaction wrote (by walking the
/// b-trees of every committed image), what lies after the stop point, the
/// `-shm` state, and whether the WAL appears to belong to its database.
public enum WALAnalyzer {
    public struct Options: Sendable {
        /// Run `PRAGMA quick_check` on the WAL view (and the main file when the WAL view fails it).
        public var integrityCheck: Bool
        public init(integrityCheck: Bool = true) { self.integrityCheck = integrityCheck }
    }

    /// - Throws: only `WorkingFolderFailure`: our own full or failing working folder stops the
    ///   analysis instead of becoming a finding about the WAL (every other problem is a finding).
    public static func analyze(_ evidence: WALEvidence, options: Options = Options()) throws -> WALAnalysis {
        let header = evidence.header
        let wal = evidence.wal
        let usableWAL = wal.flatMap { $0.isUsable ? $0 : nil }
        let transactions = usableWAL?.transactions ?? []
        var findings = presenceFindings(evidence)

        // SQLite's quick_check of the WAL view is the longest part on a large store and needs
        // nothing the page walk below finds: it starts first, beside the walk.
        let earlyQuickCheck = options.integrityCheck && !transactions.isEmpty ? BackgroundQuickCheck.start(evidence) : nil
        defer { earlyQuickCheck?.result() }

        var structure = StructureEvidence()
        var pages = PageMapping()
        do {
            pages = try mapPages(evidence, structure: &structure)
        } catch {
            if let failure = WorkingFolderFailure.from(error) { throw failure }
            findings.append(finding(.warning, "pages-not-mapped",
                                  "The pages cannot be mapped to tables: \(WALForensicsError.clause(String(describing: error)))."))
            pages.transactions = transactions.map {
                .init(number: $0.number, firstFrame: $0.firstFrame, commitFrame: $0.commitFrame, frames: $0.frameCount,
                      pages: $0.pages, databaseSizeInPages: $0.databaseSizeInPages, tables: [], entities: [], otherPages: [])
            }
        }
        if !transactions.isEmpty {
            structure.pageOneChanges = pageOneDifferences(evidence)
            try checkBelonging(evidence, options: options, pages: pages, earlyQuickCheck: earlyQuickCheck, structure: &structure)
        }
        findings += structure.findings(hasWAL: !transactions.isEmpty)
        let shmFacts = sharedMemoryFacts(evidence, findings: &findings)

        var uncommitted: WALAnalysis.Uncommitted?
        if let wal, wal.uncommittedFrameCount > 0 {
            let tail = wal.frames.suffix(wal.uncommittedFrameCount)
            uncommitted = .init(firstFrame: wal.lastCommitFrame + 1, frames: tail.count,
                                pages: Set(tail.map(\.pageNumber)).sorted())
        }
        // Warnings before information, in the order found; each about this store.
        let sorted = findings.bySeverity.map { $0.about(store: evidence.displayPath) }
        return WALAnalysis(
            displayPath: evidence.displayPath, mainFileBytes: evidence.mainFile.count,
            pageSize: header?.pageSize ?? wal?.pageSize,
            headerJournalMode: header.map { $0.isWALMode ? "wal" : "rollback" },
            isCoreData: pages.isCoreData, entitiesByTable: pages.tableEntities, wal: wal.map(walFacts), transactions: pages.transactions,
            uncommitted: uncommitted, framesAfterStop: wal.map { framesAfterStop($0, data: evidence.walData) } ?? [],
            shm: shmFacts, findings: sorted)
    }

    /// A finding of the WAL analysis (ids in docs/wal.md); `details` are its supporting facts,
    /// one per line. The store is set once the analysis is done.
    static func finding(_ severity: Finding.Severity, _ id: String, _ message: String, details: [String] = []) -> Finding {
        Finding(id: id, severity: severity, message: message,
                evidence: details.isEmpty ? [:] : ["details": .list(details.map(EvidenceValue.string))],
                explanation: "Reported by the WAL analysis (docs/wal.md).")
    }

    /// Every error caught to decide a verdict goes through this first: our own working folder's
    /// failure is thrown on, anything else becomes nil.
    static func ours<T>(_ body: () throws -> T) throws -> T? { try WorkingFolderFailure.unlessOurs(body) }

    /// The header against the files that came with it: WAL mode without a -wal, a -wal beside a
    /// rollback-journal header, the WAL's own findings, a page size that differs.
    static func presenceFindings(_ evidence: WALEvidence) -> [Finding] {
        var findings: [Finding] = []
        let header = evidence.header, wal = evidence.wal
        if let header {
            let missing = StoreNote.missingWAL(headerSaysWAL: header.isWALMode, walPresent: wal != nil, shmPresent: evidence.sharedMemoryPresent)
            if let finding = missing?.missingWALFinding(store: evidence.displayPath) { findings.append(finding) }
            // The same detector and findings as the working copy's notes (and so `check`'s).
            let fit = StoreNote.walAgainstHeader(databasePageSize: header.pageSize, headerSaysWAL: header.isWALMode,
                                                 walPageSize: wal.flatMap { $0.isUsable ? $0 : nil }?.pageSize,
                                                 walPresent: (wal?.fileSize ?? 0) > 0)
            findings += fit.filter { $0 == .walWithRollbackHeader }.compactMap { $0.walFitFinding(store: nil) }
            if let wal { findings += walFindings(wal, evidence: evidence) }
            findings += fit.filter { $0 != .walWithRollbackHeader }.compactMap { $0.walFitFinding(store: nil) }
        } else if let wal {
            findings += walFindings(wal, evidence: evidence)
        }
        return findings
    }

    /// What the page walk gives: each commit with the tables it wrote, the entities of those
    /// tables, and the connection on the WAL view the belonging checks use.
    struct PageMapping {
        var transactions: [WALAnalysis.Transaction] = []
        var tableEntities: [String: [String]] = [:]
        var isCoreData = false
        var finalConnection: Connection?
    }

    /// Pages to tables, commit by commit, then entity names from Z_PRIMARYKEY in the WAL view and
    /// the main file.
    static func mapPages(_ evidence: WALEvidence, structure: inout StructureEvidence) throws -> PageMapping {
        let usableWAL = evidence.wal.flatMap { $0.isUsable ? $0 : nil }
        let transactions = usableWAL?.transactions ?? []
        let tracker = try PageOwnershipTracker(mainFile: evidence.mainFile, wal: usableWAL, walData: evidence.walData, files: evidence.files)
        structure.mainProblems = tracker.problems
        structure.mainUnaccounted = tracker.unaccountedPages.count
        structure.mainTables = Set(tracker.objects.filter { $0.type == "table" && !$0.name.hasPrefix("sqlite_") }.map(\.name))
        var known = Set(structure.mainProblems)
        var byCommit: [CommitPages] = []
        // Page 1 as readers last saw it: a commit that rewrites only its 100-byte database
        // header (change counter, page count, freelist) did not write sqlite_schema.
        let pageSize = usableWAL?.pageSize ?? evidence.header?.pageSize ?? 0
        var pageOne: Data? = pageSize > 0 && evidence.mainFile.count >= pageSize ? evidence.mainFile.prefix(pageSize) : nil
        for transaction in transactions {
            tracker.advance()
            let headerOnly = rewritesOnlyTheHeader(transaction, evidence: evidence, pageSize: pageSize, pageOne: &pageOne)
            byCommit.append(pagesWritten(by: transaction, headerOnly: headerOnly, tracker: tracker, structure: &structure))
            for problem in tracker.problems where !known.contains(problem) {
                known.insert(problem)
                structure.walProblems.append((transaction.number, problem))
            }
        }
        if !transactions.isEmpty {
            structure.finalUnaccounted = tracker.unaccountedPages.count
            structure.finalTables = Set(tracker.objects.filter { $0.type == "table" && !$0.name.hasPrefix("sqlite_") }.map(\.name))
            structure.finalProblems = tracker.problems
        }

        var mapping = PageMapping()
        mapping.finalConnection = try ours { try PointInTime.open(evidence, commit: nil) }
        let mainConnection = transactions.isEmpty ? mapping.finalConnection : try ours { try PointInTime.open(evidence, commit: 0) }
        for connection in [mapping.finalConnection, mainConnection].compactMap({ $0 }) {
            guard let store = try ours({ try CoreDataStore.read(connection) }) ?? nil else { continue }
            mapping.isCoreData = true
            for entity in store.entities where mapping.tableEntities[entity.table]?.contains(entity.name) != true {
                mapping.tableEntities[entity.table, default: []].append(entity.name)
            }
        }
        let order = ["header", "freelist", "pointerMap", "lockByte", "unused", "pastEnd"]
        for (index, transaction) in transactions.enumerated() {
            let entry = byCommit[index]
            let tables = entry.tables.sorted()
            let entities = tables.flatMap { mapping.tableEntities[$0] ?? [] }
            mapping.transactions.append(.init(number: transaction.number, firstFrame: transaction.firstFrame,
                                              commitFrame: transaction.commitFrame, frames: transaction.frameCount,
                                              pages: transaction.pages, databaseSizeInPages: transaction.databaseSizeInPages,
                                              tables: tables, entities: entities,
                                              otherPages: order.compactMap { key in entry.other[key].map { (key, $0) } }))
        }
        return mapping
    }

    /// The tables one commit wrote, and its other pages counted by kind.
    struct CommitPages {
        var tables = Set<String>()
        var other: [String: Int] = [:]
    }

    /// Whether a commit that writes page 1 changes only its 100-byte database header there;
    /// `pageOne` follows page 1 as readers last saw it.
    static func rewritesOnlyTheHeader(_ transaction: WALTransaction, evidence: WALEvidence, pageSize: Int, pageOne: inout Data?) -> Bool {
        guard transaction.pages.contains(1), let wal = evidence.wal.flatMap({ $0.isUsable ? $0 : nil }), let walData = evidence.walData, pageSize > 0,
              let frame = (transaction.firstFrame...transaction.commitFrame).reversed().lazy
                  .compactMap({ wal.frame($0) }).first(where: { $0.pageNumber == 1 }),
              frame.pageOffset >= 0, frame.pageOffset <= walData.count - pageSize else { return false }
        let start = walData.startIndex + frame.pageOffset
        let image = walData[start..<(start + pageSize)]
        var headerOnly = false
        if let previous = pageOne, previous.count == pageSize,
           previous.dropFirst(DatabaseHeader.length).elementsEqual(image.dropFirst(DatabaseHeader.length)) {
            headerOnly = true
        }
        pageOne = Data(image)
        return headerOnly
    }

    /// Each page of a commit to the table that owns it at that commit, or to what else it is.
    static func pagesWritten(by transaction: WALTransaction, headerOnly: Bool, tracker: PageOwnershipTracker,
                             structure: inout StructureEvidence) -> CommitPages {
        var result = CommitPages()
        for page in transaction.pages {
            if page == 1 && headerOnly {
                result.other["header", default: 0] += 1
                continue
            }
            if Int(page) > transaction.databaseSizeInPages {
                result.other["pastEnd", default: 0] += 1
                structure.framesPastEnd.append((transaction.number, page, transaction.databaseSizeInPages))
                continue
            }
            guard let use = tracker.use(of: page) else {
                result.other["unused", default: 0] += 1
                continue
            }
            if let object = use.object {
                result.tables.insert(object.tableName)
            } else {
                let name = switch use.kind {
                case .freelistTrunk, .freelistLeaf: "freelist"
                case .pointerMap: "pointerMap"
                case .lockByte: "lockByte"
                default: "unused"
                }
                result.other[name, default: 0] += 1
            }
        }
        return result
    }

    /// Does the WAL belong to this database? SQLite's quick_check of the WAL view (and of the main
    /// file when the view fails it), then the tables the WAL wrote against their indexes.
    static func checkBelonging(_ evidence: WALEvidence, options: Options, pages: PageMapping,
                               earlyQuickCheck: BackgroundWork<[String]>?, structure: inout StructureEvidence) throws {
        // The store's identity in the two views (`WALBelonging`): cheap, and what another
        // database's -wal gives away even where its pages are sound.
        if let connection = pages.finalConnection, let main = try? PointInTime.open(evidence, commit: 0) {
            structure.foreignSign = WALBelonging.foreignSign(walView: connection, mainOnly: main)
        }
        if options.integrityCheck, let connection = pages.finalConnection {
            // Row by row: what SQLite found before a page it cannot parse is kept.
            let result = earlyQuickCheck?.result() ?? WALAgreement.integrity(connection, full: false, maxErrors: 5)
            if result != ["ok"] {
                // quick_check puts several findings in one row, one per line.
                structure.walViewIntegrity = result
                if let main = try ours({ try PointInTime.open(evidence, commit: 0) }) {
                    structure.mainIntegrity = try ours { try main.integrityCheck(full: false, maxErrors: 5) } ?? ["unreadable"]
                }
            }
            // quick_check does not compare an index with its table: check the tables the WAL
            // wrote in full, on both views (a -wal copied after a checkpoint the main file
            // missed leaves rows its indexes do not know).
            let touched = Set(pages.transactions.flatMap(\.tables)).filter { !$0.hasPrefix("sqlite_") }.sorted()
            if structure.walViewIntegrity == nil, !touched.isEmpty, let main = try? PointInTime.open(evidence, commit: 0),
               let disagreement = WALAgreement.compare(walView: connection, mainOnly: main, tables: touched, structureChecked: true,
                                                        walPages: Self.walPages(evidence)) {
                structure.walViewIntegrity = disagreement.walView
                structure.mainIntegrity = ["ok"]
            }
        } else if options.integrityCheck, pages.finalConnection == nil {
            structure.walViewIntegrity = ["SQLite cannot open the image with the WAL applied"]
        }
    }

    static func walFacts(_ wal: WAL) -> WALAnalysis.WALFacts {
        WALAnalysis.WALFacts(
            fileBytes: wal.fileSize, frames: wal.totalFrameSlots, validFrames: wal.validFrameCount,
            commits: wal.commitFrames.count, lastCommitFrame: wal.lastCommitFrame,
            uncommittedFrames: wal.uncommittedFrameCount, staleFrames: wal.staleFrameCount,
            pageSize: wal.pageSize, salt1: wal.salt1, salt2: wal.salt2,
            checkpointSequence: wal.checkpointSequence, bigEndianChecksums: wal.bigEndianChecksums,
            stopReason: wal.stopReason.flatMap { $0 == .endOfFile ? nil : $0.description },
            stopFrame: wal.stopReason?.frame,
            headerProblem: wal.headerProblem.map(\.description),
            databaseSizeInPages: wal.databaseSizeInPages)
    }

    // MARK: - The WAL itself

    static func walFindings(_ wal: WAL, evidence: WALEvidence) -> [Finding] {
        var findings: [Finding] = []
        let name = evidence.walName
        if let problem = wal.headerProblem {
            if case .tooShort(0) = problem {
                findings.append(finding(.info, "wal-empty", "The -wal is empty: everything was checkpointed into the main file."))
            } else if problem.sqliteIgnoresWAL {
                findings.append(finding(.warning, "wal-ignored",
                                      "SQLite ignores the whole -wal: \(WALForensicsError.clause(lowercasedFirst(problem.description)))",
                                      details: ["\(wal.totalFrameSlots) whole frames in \(name) are never read"]))
            } else {
                findings.append(finding(.warning, "wal-refused",
                                      "SQLite refuses to open the database because of the -wal: \(WALForensicsError.clause(lowercasedFirst(problem.description)))."))
            }
            return findings
        }
        let runs = framesAfterStop(wal, data: evidence.walData)
        switch wal.stopReason {
        case .partialFrame(let frame, let bytes)?:
            let size = WALFrame.headerLength + (wal.pageSize ?? 0)
            findings.append(finding(.warning, "wal-damaged",
                                  "Frame \(frame) is cut off after \(bytes) of its \(size) bytes, so SQLite silently drops it (the copy was cut short or a write was torn)."))
        case .checksumMismatch(let frame)?:
            findings.append(finding(.warning, "wal-damaged",
                                  "Frame \(frame) fails its checksum, so SQLite silently drops it and every frame after it."))
        case .zeroPageNumber(let frame)?:
            findings.append(finding(.warning, "wal-damaged",
                                  "Frame \(frame) names page 0, so SQLite silently drops it and every frame after it."))
        case .saltMismatch(let frame)?:
            if runs.first?.generation != "earlier" {
                findings.append(finding(.warning, "wal-damaged",
                                      "Frame \(frame) carries salts that match neither this WAL generation nor an earlier one, so SQLite silently drops it and every frame after it."))
            }
        default:
            break
        }
        let current = runs.filter { $0.generation == "current" }
        if !current.isEmpty {
            let frames = current.reduce(0) { $0 + $1.frames }
            let commits = current.reduce(0) { $0 + $1.commitFrames }
            let consequence = commits == 0
                ? "none of them a commit frame; SQLite ignores them"
                : "including \(plural(commits, "commit frame")): SQLite ignores them, so \(plural(commits, "committed transaction")) \(commits == 1 ? "is" : "are") lost to it"
            findings.append(finding(.warning, "frames-lost",
                                  "\(plural(frames, "frame")) of the current WAL generation lie after the stop point, \(consequence).",
                                  details: current.map { "\(frameRange($0.firstFrame, $0.frames)): \(plural($0.commitFrames, "commit frame"))" }))
        }
        let earlier = runs.filter { $0.generation == "earlier" }
        if !earlier.isEmpty {
            let frames = earlier.reduce(0) { $0 + $1.frames }
            findings.append(finding(.info, "stale-frames",
                                  "\(plural(frames, "frame")) after the stop point \(frames == 1 ? "is" : "are") left from earlier WAL generations (the WAL is reused from the start after a checkpoint); SQLite ignores them, but they may hold older versions of pages.",
                                  details: earlier.map {
                                      "\(frameRange($0.firstFrame, $0.frames)): salts \(hex($0.salt1)) \(hex($0.salt2))"
                                  }))
        }
        if wal.uncommittedFrameCount > 0 {
            let count = wal.uncommittedFrameCount
            let why = wal.stopReason == .endOfFile
                ? "belong to a transaction that never committed"
                : "belong to a transaction whose commit frame is missing or lies after the stop point"
            findings.append(finding(.info, "uncommitted-frames",
                                  "\(plural(count, "valid frame")) after the last commit \(why); SQLite ignores \(count == 1 ? "it" : "them")."))
        }
        return findings
    }

    /// Whole frames from the stop point to the end of the file, grouped into
    /// runs of equal salts (only their 24-byte headers are read).
    static func framesAfterStop(_ wal: WAL, data: Data?) -> [WALAnalysis.FrameRun] {
        guard let data, let pageSize = wal.pageSize, let header = wal.header, wal.totalFrameSlots > wal.validFrameCount else { return [] }
        let frameSize = WALFrame.headerLength + pageSize
        var runs: [WALAnalysis.FrameRun] = []
        data.withUnsafeBytes { raw in
            func be32(_ offset: Int) -> UInt32 {
                guard offset >= 0, offset + 4 <= raw.count else { return 0 }
                return UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
            }
            var runStart = 0, runFrames = 0, runCommits = 0
            var runSalts: (UInt32, UInt32) = (0, 0)
            func flush() {
                guard runFrames > 0 else { return }
                runs.append(.init(firstFrame: runStart, frames: runFrames, salt1: runSalts.0, salt2: runSalts.1,
                                  commitFrames: runCommits, generation: generation(runSalts, header: header)))
            }
            for index in (wal.validFrameCount + 1)...wal.totalFrameSlots {
                let offset = WALHeader.length + (index - 1) * frameSize
                let salts = (be32(offset + 8), be32(offset + 12))
                if runFrames == 0 || salts != runSalts {
                    flush()
                    runStart = index
                    runFrames = 0
                    runCommits = 0
                    runSalts = salts
                }
                runFrames += 1
                if be32(offset + 4) != 0 { runCommits += 1 }
            }
            flush()
        }
        return runs
    }

    /// Which generation frames with `salts` come from, relative to the WAL header.
    static func generation(_ salts: (UInt32, UInt32), header: WALHeader) -> String {
        if salts.0 == header.salt1 && salts.1 == header.salt2 { return "current" }
        // Each reset adds one to salt-1 (and to the checkpoint sequence).
        let behind = header.salt1 &- salts.0
        let resets = max(UInt32(1), header.checkpointSequence)
        return behind >= 1 && behind <= resets ? "earlier" : "unknown"
    }

    // MARK: - The -shm

    static func sharedMemoryFacts(_ evidence: WALEvidence, findings: inout [Finding]) -> WALAnalysis.SharedMemoryFacts? {
        guard evidence.sharedMemoryPresent else { return nil }
        let wal = evidence.wal
        guard let shm = evidence.sharedMemory else {
            findings.append(finding(.warning, "shm-unreadable",
                                  "The -shm is shorter than its 136-byte header, so it says nothing about the WAL (it was cut off or never initialised)."))
            return .init(readable: false, mxFrame: nil, nPage: nil, nBackfill: nil, valid: false, copiesMatch: nil,
                         checksumValid: nil, agreesWithWal: false, pageSize: nil, salt1: nil, salt2: nil,
                         iChange: nil, isInit: nil, readMarks: [])
        }
        let agrees = wal.map { shm.agrees(with: $0) } ?? false
        if !shm.copiesMatch {
            findings.append(finding(.warning, "shm-torn",
                                  "The two copies of the -shm header differ, so it was copied in the middle of a write (torn); treat its values as unreliable."))
        } else if !shm.headerChecksumValid {
            findings.append(finding(.warning, "shm-torn",
                                  "The -shm header fails its checksum, so it was copied in the middle of a write or damaged; treat its values as unreliable."))
        }
        if let wal, wal.isUsable, let walSalt1 = wal.salt1, let walSalt2 = wal.salt2 {
            let mxFrame = Int(shm.mxFrame)
            if shm.salt1 != walSalt1 || shm.salt2 != walSalt2 {
                findings.append(finding(.warning, "shm-stale",
                                      "The -shm was written for another WAL generation (its salts \(hex(shm.salt1)) \(hex(shm.salt2)) differ from the WAL's \(hex(walSalt1)) \(hex(walSalt2))), so it is stale; SQLite rebuilds it from the WAL."))
            } else if mxFrame > wal.lastCommitFrame {
                findings.append(finding(.warning, "shm-ahead-of-wal",
                                      "The -shm records commits up to frame \(mxFrame), but the WAL's valid commits end at frame \(wal.lastCommitFrame): committed frames were lost (the WAL was cut short or damaged after the index was written)."))
            } else if mxFrame < wal.lastCommitFrame {
                findings.append(finding(.warning, "shm-stale",
                                      "The -shm knows commits only up to frame \(mxFrame) while the WAL holds valid commits up to frame \(wal.lastCommitFrame), so the -shm is stale (written before the last commits, or copied while the app was writing)."))
            }
        } else if wal == nil {
            findings.append(finding(.info, "shm-without-wal", "A -shm came with the store but no -wal; the -shm alone holds no data."))
        }
        if let pageSize = shm.pageSize, let databasePageSize = evidence.header?.pageSize, pageSize != databasePageSize, shm.isInit {
            findings.append(finding(.warning, "shm-page-size-mismatch",
                                  "The -shm gives \(pageSize)-byte pages but the database has \(databasePageSize)-byte pages, so it does not belong to this store."))
        }
        if shm.nBackfill > 0 {
            findings.append(finding(.info, "shm-backfilled",
                                  "A checkpoint had already copied frames 1-\(shm.nBackfill) into the main file, so the main file alone already shows those changes."))
        }
        return .init(readable: true, mxFrame: Int(shm.mxFrame), nPage: Int(shm.nPage), nBackfill: Int(shm.nBackfill),
                     valid: shm.isIntact, copiesMatch: shm.copiesMatch, checksumValid: shm.headerChecksumValid,
                     agreesWithWal: agrees, pageSize: shm.pageSize, salt1: shm.salt1, salt2: shm.salt2,
                     iChange: shm.iChange, isInit: shm.isInit,
                     readMarks: shm.readMarks.map { $0 == 0xFFFF_FFFF ? nil : Int($0) })
    }

    // MARK: - Does the WAL belong here?

    /// Fields of page 1 that no transaction changes, compared between the
    /// main file and the image with the WAL applied.
    static func pageOneDifferences(_ evidence: WALEvidence) -> [String] {
        // Page 1 as of the last commit: its last committed frame (the main file's when the WAL never wrote it).
        guard evidence.mainFile.count >= DatabaseHeader.length, let wal = evidence.wal, wal.isUsable,
              let walData = evidence.walData, walData.count == wal.fileSize,
              let frame = wal.frames.prefix(wal.lastCommitFrame).last(where: { $0.pageNumber == 1 }),
              frame.pageOffset + DatabaseHeader.length <= walData.count else { return [] }
        let main = [UInt8](evidence.mainFile.prefix(DatabaseHeader.length))
        let start = walData.startIndex + frame.pageOffset
        let view = [UInt8](walData[start ..< start + DatabaseHeader.length])
        func u32(_ bytes: [UInt8], _ at: Int) -> UInt32 {
            UInt32(bytes[at]) << 24 | UInt32(bytes[at + 1]) << 16 | UInt32(bytes[at + 2]) << 8 | UInt32(bytes[at + 3])
        }
        var differences: [String] = []
        // Only fields the main file has set are compared: a main file that is the header page
        // written before the first checkpoint (photoanalysisd's cache: schema cookie 0, text
        // encoding 0) has not set its encoding or its auto-vacuum root yet.
        let mainHasSchema = u32(main, 40) != 0
        // A main file never checkpointed into (schema cookie and text encoding still 0: only the
        // header page SQLite writes when the database is created) has set none of these fields
        // yet; the whole store lives in the WAL, and that is no sign of a mismatch.
        if u32(main, 40) == 0 && u32(main, 56) == 0 { return differences }
        if main[20] != view[20] { differences.append("reserved bytes per page: main file \(main[20]), WAL \(view[20])") }
        if main[21..<24] != view[21..<24] { differences.append("payload fractions differ") }
        if u32(main, 56) != 0, u32(main, 56) != u32(view, 56) { differences.append("text encoding: main file \(u32(main, 56)), WAL \(u32(view, 56))") }
        if mainHasSchema, (u32(main, 52) != 0) != (u32(view, 52) != 0) || u32(main, 64) != u32(view, 64) {
            differences.append("auto-vacuum mode differs between the main file and the WAL")
        }
        if u32(view, 40) < u32(main, 40) {
            differences.append("the WAL's schema cookie \(u32(view, 40)) is older than the main file's \(u32(main, 40))")
        }
        return differences
    }

    /// The committed `-wal` for the quick index check of the tables it wrote (nil without one).
    static func walPages(_ evidence: WALEvidence) -> WALPageAgreement.Pages? {
        guard let wal = evidence.wal, let data = evidence.walData, let header = evidence.header else { return nil }
        return WALPageAgreement.Pages(wal: wal, data: data, header: header, file: evidence.files?.wal)
    }

    static func hex(_ value: UInt32) -> String { String(format: "0x%08x", value) }

    static func frameRange(_ first: Int, _ count: Int) -> String {
        count == 1 ? "frame \(first)" : "frames \(first)-\(first + count - 1)"
    }

    static func lowercasedFirst(_ text: String) -> String {
        guard let first = text.first else { return text }
        // Keep "WAL", "SQLite" and the like as they are.
        if text.count > 1, text.dropFirst().first?.isUppercase == true { return text }
        return first.lowercased() + text.dropFirst()
    }
}

/// Facts gathered while walking the images that bear on whether the WAL belongs to the database.
struct StructureEvidence {
    var mainProblems: [BTreeProblem] = []
    var mainUnaccounted = 0
    var mainTables: Set<String> = []
    var walProblems: [(commit: Int, problem: BTreeProblem)] = []
    var finalProblems: [BTreeProblem] = []
    var finalUnaccounted = 0
    var finalTables: Set<String> = []
    var framesPastEnd: [(commit: Int, page: UInt32, size: Int)] = []
    var pageOneChanges: [String] = []
    var walViewIntegrity: [String]?
    var mainIntegrity: [String]?
    /// Why the -wal cannot belong to the main file (`WALBelonging`), when something says so.
    var foreignSign: String?

    func findings(hasWAL: Bool) -> [Finding] {
        var findings: [Finding] = []
        var signs: [String] = []
        if hasWAL {
            for item in framesPastEnd.prefix(5) {
                signs.append("commit \(item.commit) writes page \(item.page) of a \(item.size)-page database")
            }
            if framesPastEnd.count > 5 { signs.append("\(framesPastEnd.count - 5) more pages past the end") }
            if let foreignSign { signs.append("the -wal " + foreignSign) }
            signs += pageOneChanges
            if !mainTables.isEmpty, !finalTables.isEmpty, mainTables.isDisjoint(with: finalTables) {
                signs.append("none of the main file's tables (\(mainTables.sorted().prefix(5).joined(separator: ", "))) exist once the WAL is applied")
            }
            let mainClean = mainProblems.isEmpty && mainUnaccounted == 0
            if mainClean {
                for (commit, problem) in walProblems.prefix(5) { signs.append("at commit \(commit): \(problem)") }
                if walProblems.count > 5 { signs.append("\(walProblems.count - 5) more structural problems") }
                if finalUnaccounted > 0 {
                    signs.append("\(finalUnaccounted) page\(finalUnaccounted == 1 ? " is" : "s are") used by nothing once the WAL is applied")
                }
                if let walViewIntegrity, mainIntegrity == nil || mainIntegrity == ["ok"] {
                    signs.append("SQLite's check with the WAL applied (the main file alone passes): " + walViewIntegrity.prefix(3).joined(separator: "; "))
                }
            }
            if !signs.isEmpty {
                findings.append(WALAnalyzer.finding(.warning, "wal-may-not-belong",
                                      "The WAL does not appear to belong to this main file, or the two were copied at different moments (for example the main file before a checkpoint and the -wal after it), or one of them is damaged: its frames are valid, but applying them gives an inconsistent database, and SQLite would show plausible but wrong data without any error. Copy the main file, -wal and -shm again at one moment.",
                                      details: signs))
            }
        }
        if !mainProblems.isEmpty || mainUnaccounted > 0 {
            var details = mainProblems.prefix(5).map(\.description)
            if mainUnaccounted > 0 { details.append("\(mainUnaccounted) pages are used by nothing") }
            findings.append(WALAnalyzer.finding(.warning, "main-file-inconsistent",
                                  "The main file alone is structurally inconsistent (a partial checkpoint, or damage); its main-file-only view may be wrong.",
                                  details: details))
        }
        return findings
    }
}

/// `PRAGMA quick_check` of the working copy's own WAL view, on a thread and a connection of its
/// own. The connection is opened before the thread starts, so no two connections open the copy
/// (and build its wal-index) at once; nil where the view is an image written for the purpose
/// (the analysis then checks its own connection, as before).
enum BackgroundQuickCheck {
    /// The problems quick_check finds (["ok"] for none), from `result()`.
    static func start(_ evidence: WALEvidence) -> BackgroundWork<[String]>? {
        guard let connection = PointInTime.workingCopyView(evidence, commit: evidence.commitCount) else { return nil }
        return BackgroundWork(decodingAsCaller: "storelens.wal-quick-check") { WALAgreement.integrity(connection, full: false, maxErrors: 5) }
    }
}
