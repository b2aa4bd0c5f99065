import CoreDataStore
import Foundation
import SQLiteAccess
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing
@testable import WALForensics

/// `recover` against SQLite itself: the WAL is cut after every commit, SQLite reads each copy, and
/// the versions (runs of commits with identical values per record) and their states are derived
/// from those rows alone; recover must report exactly those versions, nothing more.
@Suite("Every version of every record the WAL proves")
struct RecordRecoveryTests {
    /// A record's identity and one version's runs of commits and state: what must match exactly.
    struct Expected: Hashable, CustomStringConvertible {
        let entity: Int
        let pk: Int64
        let runs: [[Int]]
        let state: String
        var description: String { "#\(entity)/\(pk) \(state) \(runs)" }
    }

    /// Every entity table's rows at each commit (0 … count) as SQLite shows them.
    static func images(_ copy: SQLiteWALBuilder.Copy, evidence: WALEvidence) throws -> [RecordTruth.Image] {
        let wal = evidence.wal
        let pageSize = wal?.pageSize ?? 4096
        var out = [try RecordTruth.sqliteImage(copy, frames: 0, pageSize: pageSize)]
        for commit in 0 ..< evidence.commitCount {
            out.append(try RecordTruth.sqliteImage(copy, frames: try #require(wal).transactions[commit].commitFrame, pageSize: pageSize))
        }
        return out
    }

    /// The versions the images prove: per (Z_ENT, Z_PK), the row's columns at each commit (Z_OPT, the
    /// version counter, left out), identical rows folded, the state from what followed the last run.
    static func expected(_ images: [RecordTruth.Image]) -> Set<Expected> {
        let history: Set<String> = ["ATRANSACTION", "ACHANGE", "ATRANSACTIONSTRING"]
        struct Key: Hashable { let entity: Int; let pk: Int64 }
        var timeline: [Key: [String?]] = [:]
        for (commit, image) in images.enumerated() {
            for (table, rows) in image where !history.contains(table) {
                for (pk, row) in rows {
                    guard let ent = row["Z_ENT"]?.int else { continue }
                    let print = row.filter { $0.key != "Z_OPT" }.sorted { $0.key < $1.key }.map { "\($0.key)=\(String(reflecting: $0.value))" }.joined(separator: "|")
                    let key = Key(entity: ent, pk: pk)
                    var line = timeline[key] ?? Array(repeating: nil, count: images.count)
                    line[commit] = print
                    timeline[key] = line
                }
            }
        }
        var out: Set<Expected> = []
        let last = images.count - 1
        for (key, line) in timeline {
            var runs: [String: [[Int]]] = [:]
            var order: [String] = []
            for (commit, print) in line.enumerated() {
                guard let print else { continue }
                if commit > 0, line[commit - 1] == print {
                    runs[print]![runs[print]!.count - 1][1] = commit
                } else {
                    if runs[print] == nil { order.append(print) }
                    runs[print, default: []].append([commit, commit])
                }
            }
            for print in order {
                let spans = runs[print]!
                let end = spans.last![1]
                let state = end == last ? "live" : (line[end + 1] == nil ? "deleted" : "superseded")
                out.insert(Expected(entity: key.entity, pk: key.pk, runs: spans, state: state))
            }
        }
        return out
    }

    static func found(_ versions: [RecordVersion]) -> Set<Expected> {
        Set(versions.map { v in
            Expected(entity: v.entityNumber, pk: v.pk, runs: v.sources.map { [$0.firstCommit, $0.lastCommit] }, state: v.state.rawValue)
        })
    }

    /// Recall and precision against SQLite, each version's values against the row SQLite shows at
    /// its first commit, each ending against the history SQLite shows for that commit.
    @discardableResult
    static func check(_ copy: SQLiteWALBuilder.Copy, evidence: WALEvidence) throws -> (versions: [RecordVersion], images: [RecordTruth.Image]) {
        let images = try images(copy, evidence: evidence)
        let all = try RecordRecovery.versions(evidence)
        // Deleted records only persistent history holds come last (HistoryDeletesTests holds
        // them to ACHANGE); here: each is a delete of the last state's history, of a record no
        // committed version ends.
        let versions = all.filter { $0.confidence != .tombstone }
        #expect(all.prefix(versions.count).allSatisfy { $0.confidence != .tombstone })
        let truth = expected(images), got = found(versions)
        for t in all.dropFirst(versions.count) {
            #expect((images.last?["ACHANGE"] ?? [:]).values.contains {
                $0["ZCHANGETYPE"]?.int64 == 2 && $0["ZENTITY"]?.int == t.entityNumber && $0["ZENTITYPK"]?.int64 == t.pk
            }, "\(t.entity)#\(t.pk): a tombstone of a delete history holds")
            #expect(!truth.contains { $0.entity == t.entityNumber && $0.pk == t.pk && $0.state != "live" }, "\(t.entity)#\(t.pk)")
        }
        #expect(got.count == versions.count, "no version listed twice")
        #expect(truth.subtracting(got).isEmpty, "missed: \(truth.subtracting(got).sorted { $0.description < $1.description })")
        #expect(got.subtracting(truth).isEmpty, "not in the store: \(got.subtracting(truth).sorted { $0.description < $1.description })")
        // In key order, as documented.
        let keys = versions.map { [$0.entityNumber, Int($0.pk)] }
        #expect(keys == keys.sorted { $0.lexicographicallyPrecedes($1) })

        var fieldColumns: [Int: [String: [String: [String]]]] = [:]
        for v in versions {
            let first = v.sources[0].firstCommit
            if fieldColumns[first] == nil { fieldColumns[first] = try RecordTruth.fieldColumns(try PointInTime.open(evidence, commit: first)) }
            let row = images[first][v.table]?[v.pk] ?? [:]
            func columns(_ name: String) -> [String] { fieldColumns[first]?[v.table]?[name] ?? [name] }
            #expect(!v.values.isEmpty, "\(v.entity)#\(v.pk) has values")
            for value in v.values {
                if columns(value.name).isEmpty, case .null = value.value { continue }
                #expect(columns(value.name).contains { RecordTruth.matches(value.value, row[$0]) },
                        "\(v.entity)#\(v.pk) commit \(first) \(value.name): \(value.value)")
            }
            for s in v.sources {
                #expect(s.writtenBy == s.firstCommit)
                #expect(s.file == (s.firstCommit == 0 ? evidence.displayPath : evidence.displayPath + "-wal"))
                if s.firstCommit > 0 { #expect(s.commitFrame == evidence.wal?.transactions[s.firstCommit - 1].commitFrame) }
                guard let e = s.endedBy else {
                    #expect(s.lastCommit == evidence.commitCount && v.state == .live)
                    continue
                }
                #expect(e.commit == s.lastCommit + 1)
                // The transactions of that commit whose ACHANGE rows name this record with this change.
                let type: Int64 = e.kind == .deleted ? 2 : 1
                let before = Set((images[e.commit - 1]["ATRANSACTION"] ?? [:]).keys)
                let written = Set((images[e.commit]["ATRANSACTION"] ?? [:]).keys).subtracting(before)
                let naming = Set((images[e.commit]["ACHANGE"] ?? [:]).values.filter {
                    $0["ZENTITY"]?.int == v.entityNumber && $0["ZENTITYPK"]?.int64 == v.pk && $0["ZCHANGETYPE"]?.int64 == type
                }.compactMap { $0["ZTRANSACTIONID"]?.int64 }).intersection(written)
                #expect(Set(e.transactions.map(\.id)) == naming, "\(v.entity)#\(v.pk) ended by commit \(e.commit)")
            }
        }
        return (versions, images)
    }

    @Test("a builder store: insert, two updates, a change undone, deletes — exactly the versions SQLite shows, with their states and transactions")
    func builderStore() throws {
        let folder = try TemporaryFolder("recover-builder")
        let url = folder.path("default.store")
        let writer = try StoreWriter(url: url, model: SampleModels.todo)
        let day = Date(timeIntervalSince1970: 1_722_000_000)
        try writer.transaction { w in
            _ = try w.insert("TodoList", ["name": .string("Home")])
            for i in 1...5 {
                try w.insert("TodoItem", ["id": .uuid(UUID()), "title": .string("task \(i)"), "createdAt": .date(day),
                                          "list": .object(entity: "TodoList", pk: 1)])
            }
        }
        try writer.checkpoint()
        try writer.transaction(.init(author: "insert")) { w in
            try w.insert("TodoItem", ["id": .uuid(UUID()), "title": .string("new"), "createdAt": .date(day), "list": .object(entity: "TodoList", pk: 1)])
        }
        try writer.transaction(.init(author: "first update")) { w in
            try w.update("TodoItem", pk: 3, ["title": .string("renamed once")])
            try w.update("TodoItem", pk: 4, ["title": .string("detour")])
        }
        try writer.transaction(.init(author: "second update")) { w in
            try w.update("TodoItem", pk: 3, ["title": .string("renamed twice")])
            try w.update("TodoItem", pk: 4, ["title": .string("task 4")])
            try w.update("TodoItem", pk: 6, ["notes": .string("=HYPERLINK(\"x\")")])
        }
        try writer.transaction(.init(author: "delete")) { w in
            try w.delete("TodoItem", pk: 3)
            try w.delete("TodoItem", pk: 6)
        }
        let main = try Data(contentsOf: url)
        let walData = try Data(contentsOf: URL(fileURLWithPath: url.path + "-wal"))
        try writer.close(leavingWAL: true)
        let copy = try SQLiteWALBuilder.Copy.holding(main: main, wal: walData, in: folder.path("copy"))
        let evidence = WALEvidence(displayPath: "default.store", mainFile: main, walData: walData)
        #expect(evidence.commitCount == 4)

        let (versions, _) = try Self.check(copy, evidence: evidence)
        // Beyond the generic check: the shapes an examiner reads.
        let three = versions.filter { $0.entity == "TodoItem" && $0.pk == 3 }
        #expect(three.map(\.state) == [.superseded, .superseded, .deleted])
        #expect(three.last?.endedBy?.transactions.map(\.author) == ["delete"])
        // A title changed and changed back: one version, seen in two runs of commits.
        let four = versions.filter { $0.entity == "TodoItem" && $0.pk == 4 }
        #expect(four.map(\.state) == [.live, .superseded])
        #expect(four.first?.sources.count == 2)
        #expect(four.first?.sources.first?.endedBy?.transactions.map(\.author) == ["first update"])
        // Filters: what is asked for, and only that.
        let deleted = try RecordRecovery.versions(evidence, filter: .init(states: [.deleted]))
        #expect(Set(deleted.map(\.pk)) == [3, 6] && deleted.allSatisfy { $0.state == .deleted })
        let one = try RecordRecovery.versions(evidence, filter: .init(entity: "todoitem", pk: 4))
        #expect(one.count == 2 && one.allSatisfy { $0.pk == 4 && $0.entity == "TodoItem" })
        #expect(try RecordRecovery.versions(evidence, filter: .init(entity: "TodoList", states: [.superseded])).isEmpty)
    }

    @Test("plain SQLite tables with Z_PK and Z_ENT but no model: versions shown column by column, a pk reused after a delete")
    func noModel() throws {
        var builder = try SQLiteWALBuilder("recover-plain") { db in
            try db.execute("""
                CREATE TABLE ZTHING (Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME TEXT);
                INSERT INTO ZTHING VALUES (1, 1, 1, 'a'), (2, 1, 1, 'b');
                """)
        }
        try builder.commit("UPDATE ZTHING SET ZNAME = 'a2', Z_OPT = 2 WHERE Z_PK = 1")
        try builder.commit("DELETE FROM ZTHING WHERE Z_PK = 2")
        try builder.commit("INSERT INTO ZTHING VALUES (2, 1, 1, 'b again'); UPDATE ZTHING SET Z_OPT = 3 WHERE Z_PK = 1")
        let copy = try builder.copy()
        let evidence = try copy.evidence(withSharedMemory: false)
        let (versions, _) = try Self.check(copy, evidence: evidence)
        #expect(versions.count == 4)
        #expect(versions.first?.values.map(\.name) == ["ZNAME"])
    }

    @Test("the genuine SwiftData store: deleted Items with their names and deleting commit, intermediate names superseded", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
    func realStore() throws {
        let real = try #require(ProjectPaths.realFixtures()).appendingPathComponent("swiftdata-resources")
        let folder = try TemporaryFolder("recover-real")
        let copy = try SQLiteWALBuilder.Copy.of(store: real.appendingPathComponent("default.store"),
                                                wal: real.appendingPathComponent("default.store-wal"), in: folder.url)
        let evidence = try copy.evidence(withSharedMemory: false)
        let (versions, images) = try Self.check(copy, evidence: evidence)

        // From SQLite's rows alone: each Item's name at each commit, the commit that deleted it.
        var deletedNames: Set<String> = [], intermediate: Set<String> = []
        var names: [Int64: [String]] = [:]
        for (commit, image) in images.enumerated() {
            let items = image["ZITEM"] ?? [:]
            for (pk, row) in items {
                if let name = row["ZNAME"]?.string, names[pk]?.last != name { names[pk, default: []].append(name) }
            }
            if commit > 0 {
                for pk in Set((images[commit - 1]["ZITEM"] ?? [:]).keys).subtracting(items.keys) {
                    if let name = images[commit - 1]["ZITEM"]?[pk]?["ZNAME"]?.string { deletedNames.insert("\(name) @\(commit)") }
                }
            }
        }
        for (_, seen) in names { intermediate.formUnion(seen.dropLast()) }
        func name(_ v: RecordVersion) -> String? {
            if case .text(let s)? = v.values.first(where: { $0.name == "name" })?.value { return s }
            return nil
        }
        let items = versions.filter { $0.entity == "Item" }
        let reportedDeleted = Set(items.filter { $0.state == .deleted }.compactMap { v in name(v).map { "\($0) @\(v.endedBy?.commit ?? -1)" } })
        #expect(!deletedNames.isEmpty)
        #expect(reportedDeleted == deletedNames)
        let superseded = Set(items.filter { $0.state == .superseded }.compactMap(name))
        #expect(intermediate.isSubset(of: superseded), "intermediate names: \(intermediate.subtracting(superseded))")

        // Carving on: the committed versions are the same (a carved copy only adds finds), the deleted
        // Items the same, and an Item carved from free space has a name some commit showed.
        let carving = try RecordRecovery.versions(evidence, carve: true)
        #expect(carving.filter { !$0.sources.isEmpty }.count == versions.count)
        let carvedItems = carving.filter { $0.entity == "Item" }
        #expect(Set(carvedItems.filter { $0.state == .deleted }.compactMap { v in name(v).map { "\($0) @\(v.endedBy?.commit ?? -1)" } }) == deletedNames)
        let everyName = Set(names.values.joined())
        for v in carvedItems where v.sources.isEmpty && v.confidence != .tombstone {
            #expect(name(v).map(everyName.contains) == true, "carved \(v.entity)#\(v.pk) \(name(v) ?? "?") is a name some commit held")
        }
        // A record only history names (its delete kept no values) is that delete's key, nothing more.
        for v in carvedItems where v.confidence == .tombstone {
            #expect(v.state == .deleted && !v.historyDeletes.isEmpty && v.historyDeletes.allSatisfy { t in t.changes.contains { $0.pk == v.pk } })
        }
    }
}

/// Apple's own stores with a WAL: every version recover lists is exactly a run of commits SQLite
/// shows (the same check as the builder's stores), and the answer is the same in every process.
@Suite("recover on Apple's WAL stores", .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)))
struct AppleStoreRecoveryTests {
    static let folders = ["notes-macos15-wal", "photos-macos1571-wal", "photos-macos10157-wal"]

    @Test("versions exactly as SQLite shows them, commit by commit", arguments: folders)
    func versionsMatchSQLite(_ name: String) throws {
        let real = try #require(ProjectPaths.realFixtures()).appendingPathComponent(name)
        let store = try #require(try ProjectPaths.realStoreFile(in: real))
        let folder = try TemporaryFolder("recover-apple")
        let copy = try SQLiteWALBuilder.Copy.of(store: store, wal: URL(fileURLWithPath: store.path + "-wal"), in: folder.url)
        try RecordRecoveryTests.check(copy, evidence: try copy.evidence(withSharedMemory: false))
    }

    /// Archived values hold dictionaries, which Swift orders by a hash seeded per process: a version
    /// boundary once depended on that order (two runs on Notes gave 9 and 10 superseded versions).
    @Test("two processes give the same answer", arguments: folders)
    func sameInEveryProcess(_ name: String) throws {
        let real = try #require(ProjectPaths.realFixtures()).appendingPathComponent(name)
        let store = try #require(try ProjectPaths.realStoreFile(in: real))
        let runs = try (0 ..< 3).map { _ in try CLI.run(["recover", store.path, "--format", "jsonl"]) }
        for run in runs { #expect(run.status == 0, "\(run.stderr)") }
        #expect(Set(runs.map(\.stdout)).count == 1)
    }
}
