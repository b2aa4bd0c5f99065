import Foundation
import SQLiteAccess
import StoreTestSupport
import Testing

/// README.md's tour must not drift from the tool, nor the tool from the truth: every console block
/// of "A tour" is run as written (the built binary, on Fixtures/demo-container) and its lines must
/// appear in the output, and the numbers the blocks show are computed here with SQLite on copies
/// of the demo stores, the WAL's own frame headers and the legacy JSON file.
@Suite("README tour")
struct ReadmeTourTests {
    static let root = ProjectPaths.root()
    static let container = root.appendingPathComponent("Fixtures/demo-container")
    static let support = container.appendingPathComponent("Library/Application Support")

    /// One ```console block: the command after `$ storelens`, and the lines shown below it.
    struct Block { let arguments: [String]; let lines: [String] }

    static func tourBlocks() throws -> [Block] {
        let readme = try String(contentsOf: root.appendingPathComponent("README.md"), encoding: .utf8)
        let start = try #require(readme.range(of: "## A tour"), "README.md has its tour")
        let tour = readme[start.upperBound...]
        let end = tour.range(of: "\n## ")?.lowerBound ?? tour.endIndex
        var blocks: [Block] = []
        var current: [String]?
        for line in tour[..<end].split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            if line.hasPrefix("```console") { current = []; continue }
            if line.hasPrefix("```"), let lines = current {
                let command = try #require(lines.first, "a console block starts with its command")
                #expect(command.hasPrefix("$ storelens "), "\(command)")
                blocks.append(Block(arguments: command.dropFirst("$ storelens ".count).split(separator: " ").map(String.init),
                                    lines: Array(lines.dropFirst())))
                current = nil
                continue
            }
            current?.append(line)
        }
        return blocks
    }

    static func normalised(_ line: String) -> String {
        line.split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// The README's lines in the output, in order: from where the first one appears, each next
    /// line is the next output line, except that a `…` line skips any number of lines and the
    /// indented details under a finding (evidence and advice) may be left out.
    static func mismatch(readme: [String], output: [String]) -> String? {
        let shown = readme.map(normalised)
        let lines = output.map(normalised)
        guard let first = shown.first else { return nil }
        guard var at = lines.firstIndex(of: first) else { return "the output has no line \"\(first)\"" }
        var skipping = false
        for line in shown.dropFirst() {
            if line == "…" { skipping = true; continue }
            at += 1
            while at < lines.count, lines[at] != line,
                  skipping || output[at].prefix { $0 == " " }.count >= 6 { at += 1 }
            guard at < lines.count, lines[at] == line else { return "the output does not go on with \"\(line)\"" }
            skipping = false
        }
        return nil
    }

    @Test("every console block of the tour is what the command prints now")
    func blocksMatchOutput() throws {
        let before = try FolderSnapshot(Self.container)
        let blocks = try Self.tourBlocks()
        #expect(blocks.count >= 3, "scan, inspect and audit at least")
        for block in blocks where !block.lines.isEmpty {
            // Paths in the README are relative to the project root.
            let arguments = block.arguments.map { $0.hasPrefix("Fixtures/") ? Self.root.appendingPathComponent($0).path : $0 }
            let result = try CLI.run(arguments)
            #expect([0, 1].contains(result.status), "\(block.arguments): \(result.stderr)")
            let output = result.stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            #expect(Self.mismatch(readme: block.lines, output: output) == nil,
                    "storelens \(block.arguments.joined(separator: " ")): \(Self.mismatch(readme: block.lines, output: output) ?? "")")
        }
        #expect(try FolderSnapshot(Self.container) == before, "the demo container is left as it was")
    }

    @Test("the matcher fails on a changed number, a missing line and a reordered line")
    func matcherCanFail() {
        let output = ["header", "  a  1", "  b  2", "      detail", "  c  3"]
        #expect(Self.mismatch(readme: ["a 1", "b 2", "c 3"], output: output) == nil)
        #expect(Self.mismatch(readme: ["a 1", "…", "c 3"], output: output) == nil)
        #expect(Self.mismatch(readme: ["a 1", "b 3"], output: output) != nil)
        #expect(Self.mismatch(readme: ["a 1", "c 3"], output: output) != nil)
        #expect(Self.mismatch(readme: ["b 2", "a 1"], output: output) != nil)
        #expect(Self.mismatch(readme: ["z 9"], output: output) != nil)
    }

    // MARK: - The numbers, computed

    static func block(_ command: String) throws -> Block {
        try #require(try tourBlocks().first { $0.arguments.first == command }, "the tour shows `storelens \(command)`")
    }

    static func fields(_ line: String) -> [String] { line.split(whereSeparator: \.isWhitespace).map(String.init) }

    @Test("scan: the sizes and sidecars the tour shows are the files'")
    func scanNumbers() throws {
        let rows = try Self.block("scan").lines.filter { $0.contains("Library/Application Support/") }
        #expect(!rows.isEmpty)
        for line in rows {
            let path = try #require(line.range(of: #"Library/Application Support/\S+"#, options: .regularExpression).map { String(line[$0]) })
            let rest = Self.fields(String(line[line.range(of: path)!.upperBound...]))
            // FORMAT STACK SIZE SIDECARS CONTAINER
            let file = Self.container.appendingPathComponent(path)
            let size = try #require(try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? NSNumber).intValue
            #expect(rest.count == 5 && Int(rest[2]) == size, "\(path): \(rest)")
            let sidecars = ["wal", "shm"].filter { FileManager.default.fileExists(atPath: file.path + "-" + $0) }
            #expect(rest.count == 5 && rest[3] == (sidecars.isEmpty ? "-" : sidecars.joined(separator: ",")), "\(path) sidecars")
        }
    }

    @Test("inspect: rows with and without the WAL, MAX PK, Z_MAX, frames, commits and history are SQLite's and the WAL's")
    func inspectNumbers() throws {
        let store = Self.support.appendingPathComponent("default.store")
        let withWAL = try SQLiteOracle(copying: store), mainOnly = try SQLiteOracle(copying: store, wal: .none)
        let keys = Dictionary(uniqueKeysWithValues: try withWAL.primaryKeys().map { ($0.ent, $0) })
        let lines = try Self.block("inspect").lines
        var entityRows = 0
        for f in lines.map(Self.fields) where f.count == 9 && Int(f[0]) != nil {
            // Z_ENT ENTITY PARENT TABLE ROWS +SUB MAIN-FILE MAX-PK Z_MAX
            let ent = Int(f[0])!
            let key = try #require(keys[ent], "Z_PRIMARYKEY has entity \(ent)")
            #expect(f[1] == key.name)
            let table = f[3]
            let rows = try withWAL.count(table, where: "Z_ENT = \(ent)")
            #expect(Int(f[4]) == rows, "\(f[1]) ROWS")
            #expect(Int(f[5]) == rows, "\(f[1]) +SUB (no subentities)")
            #expect(Int(f[6]) == (try mainOnly.count(table, where: "Z_ENT = \(ent)")), "\(f[1]) MAIN FILE")
            #expect(Int(f[7]) == (try withWAL.scalar("SELECT max(Z_PK) FROM \(Identifier.quoted(table))").int), "\(f[1]) MAX PK")
            #expect(Int(f[8]) == key.max, "\(f[1]) Z_MAX")
            entityRows += 1
        }
        #expect(entityRows >= 3)
        let frames = try #require(try WALFrameOracle.read(URL(fileURLWithPath: store.path + "-wal")))
        #expect(try withWAL.walLastCommitFrame() == frames.lastCommitFrame)
        let wal = try #require(lines.first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("wal ") })
        let hex = { (v: UInt32) in "0x" + String(format: "%08x", v) }
        #expect(Self.normalised(wal) == "wal \(frames.validFrames) of \(frames.frameSlots) frames valid, \(frames.commitFrames.count) commits, last commit at frame \(frames.lastCommitFrame), salts \(hex(frames.salt1)) \(hex(frames.salt2))")
        let history = try #require(lines.first { $0.trimmingCharacters(in: .whitespaces).hasPrefix("history ") })
        #expect(Self.normalised(history) == "history \(try withWAL.count("ATRANSACTION")) transactions, \(try withWAL.count("ACHANGE")) changes")
    }

    /// The demo manifest's stacks: name → (store, writer criteria).
    struct Stack { let name: String; let store: String; let bundleIDs: Set<String>?; let authors: Set<String>?; let contextNames: Set<String>? }

    static func stacks() throws -> [Stack] {
        let data = try Data(contentsOf: root.appendingPathComponent("Fixtures/demo-container.storelens.json"))
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        return ((json["stacks"] as? [[String: Any]]) ?? []).map { s in
            let w = s["writers"] as? [String: Any] ?? [:]
            return Stack(name: s["name"] as? String ?? "", store: s["store"] as? String ?? "",
                         bundleIDs: (w["bundleIDs"] as? [String]).map(Set.init), authors: (w["authors"] as? [String]).map(Set.init),
                         contextNames: (w["contextNames"] as? [String]).map(Set.init))
        }
    }

    /// Transactions and changes of `entity` that each stack's writers made, as SQLite reads the history on a copy.
    static func writersSeen(entity: String) throws -> [String: (transactions: Int, changes: Int)] {
        var seen: [String: (Int, Int)] = [:]
        for stack in try stacks() where stack.bundleIDs != nil || stack.authors != nil {
            let db = try SQLiteOracle(copying: container.appendingPathComponent(stack.store))
            // The manifest names CDTodo as TodoItem's legacy entity.
            guard let ent = try db.primaryKeys().first(where: { $0.name == entity || ($0.name == "CDTodo" && entity == "TodoItem") })?.ent else { continue }
            let rows = try db.rows("""
                SELECT c.ZTRANSACTIONID, b.ZNAME, a.ZNAME, x.ZNAME FROM ACHANGE c JOIN ATRANSACTION t ON t.Z_PK = c.ZTRANSACTIONID
                LEFT JOIN ATRANSACTIONSTRING b ON b.Z_PK = t.ZBUNDLEIDTS LEFT JOIN ATRANSACTIONSTRING a ON a.Z_PK = t.ZAUTHORTS
                LEFT JOIN ATRANSACTIONSTRING x ON x.Z_PK = t.ZCONTEXTNAMETS WHERE c.ZENTITY = ?
                """, [.integer(Int64(ent))])
            let mine = rows.filter { r in
                (stack.bundleIDs.map { $0.contains(r[1].string ?? "") } ?? true)
                    && (stack.authors.map { $0.contains(r[2].string ?? "") } ?? true)
                    && (stack.contextNames.map { $0.contains(r[3].string ?? "") } ?? true)
            }
            // A bundle shared by two stacks belongs to the one whose criteria are narrower (the widget's context).
            let narrower = try stacks().filter { $0.name != stack.name && $0.store == stack.store && $0.contextNames != nil && stack.contextNames == nil }
            let claimed = mine.filter { r in !narrower.contains { n in
                (n.bundleIDs.map { $0.contains(r[1].string ?? "") } ?? true) && (n.contextNames.map { $0.contains(r[3].string ?? "") } ?? true)
            } }
            if !claimed.isEmpty { seen[stack.name] = (Set(claimed.compactMap { $0[0].int }).count, claimed.count) }
        }
        return seen
    }

    /// Identities (UUIDs, uppercase, no dashes) of a table's ZID column on a copy.
    static func identities(_ store: String, _ table: String) throws -> [String] {
        try SQLiteOracle(copying: container.appendingPathComponent(store)).rows("SELECT upper(hex(ZID)) FROM \(Identifier.quoted(table))").compactMap { $0[0].string }
    }

    @Test("audit: records per side, writers seen and each finding's count, computed from the stores and the JSON file")
    func auditNumbers() throws {
        let lines = try Self.block("audit").lines.map(Self.normalised)
        let legacy = try Self.identities("Library/Application Support/Model.sqlite", "ZCDTODO")
        let modern = try Self.identities("Library/Application Support/default.store", "ZTODOITEM")
        let lists = try SQLiteOracle(copying: Self.support.appendingPathComponent("default.store")).count("ZTODOLIST")
        let jsonData = try Data(contentsOf: Self.container.appendingPathComponent("Documents/todos.imported.json"))
        let json = try #require(try JSONSerialization.jsonObject(with: jsonData) as? [[String: Any]])
        let jsonIDs = json.compactMap { ($0["id"] as? String)?.replacingOccurrences(of: "-", with: "").uppercased() }

        func seen(_ entity: String) throws -> String {
            let s = try Self.writersSeen(entity: entity)
            return try Self.stacks().compactMap { st in s[st.name].map { "\(st.name): \($0.transactions)/\($0.changes)" } }.joined(separator: ", ")
        }
        #expect(lines.contains("TodoItem CDTodo modern legacy: \(legacy.count), modern: \(modern.count), json: \(json.count) \(try seen("TodoItem"))"), "\(lines)")
        #expect(lines.contains("TodoList - modern modern: \(lists) \(try seen("TodoList"))"), "\(lines)")

        // The findings: who wrote TodoList besides its writer, duplicates by identity, records not carried over.
        let listWriters = try Self.writersSeen(entity: "TodoList").filter { $0.key != "modern" }
        let violator = try #require(listWriters.first)
        #expect(listWriters.count == 1)
        let t = violator.value.transactions, c = violator.value.changes
        #expect(lines.contains("ERROR writer-violation [TodoList]: Stack \(violator.key) wrote TodoList in \(t) transaction\(t == 1 ? "" : "s") (\(c) change\(c == 1 ? "" : "s")), but only modern may write it."))
        let duplicated = Dictionary(grouping: modern, by: { $0 }).filter { $0.value.count > 1 }.count
        #expect(lines.contains("ERROR duplicate-import [TodoItem]: \(duplicated) record\(duplicated == 1 ? "" : "s") of TodoItem exists more than once by identity (id)."))
        let missing = Set(legacy).subtracting(modern).count
        #expect(lines.contains("ERROR not-migrated [TodoItem]: \(missing) records of CDTodo in legacy are missing from modern's TodoItem."))
        let notImported = Set(jsonIDs).subtracting(modern).count
        #expect(lines.contains("ERROR json-not-imported [TodoItem]: \(notImported) record of TodoItem in the legacy JSON file is missing from modern's TodoItem."))
        #expect(lines.contains("findings (\(lines.filter { $0.hasPrefix("ERROR ") }.count) error, 0 warning, 0 info)"))
    }
}
