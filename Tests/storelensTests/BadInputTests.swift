import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// Every bad input gets one clear sentence naming the file, the documented exit code, no crash,
/// no change to the input and no scratch folder left behind.
@Suite("inspect on bad input")
struct BadInputTests {
    struct Case: CustomStringConvertible, Sendable {
        let name: String
        /// Makes the input inside `folder` and returns the path to pass to `inspect`.
        let make: @Sendable (URL) throws -> String
        let extraArguments: [String]
        let expectedStatus: Int32
        /// Words the error must contain (besides the file name).
        let messageContains: [String]
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "missing path", make: { $0.appendingPathComponent("nope.sqlite").path }, extraArguments: [],
             expectedStatus: 2, messageContains: ["no such file"]),
        Case(name: "a folder that holds no store", make: { folder in
            let sub = folder.appendingPathComponent("AppData")
            try FileManager.default.createDirectory(at: sub.appendingPathComponent("Documents"), withIntermediateDirectories: true)
            try Data("notes".utf8).write(to: sub.appendingPathComponent("Documents/notes.txt"))
            return sub.path
        }, extraArguments: [], expectedStatus: 2, messageContains: ["no SQLite store was found", "storelens scan"]),
        Case(name: "not SQLite", make: { folder in
            let url = folder.appendingPathComponent("notes.sqlite")
            try Data("just some text, not a database at all; long enough to have a header".utf8).write(to: url)
            return url.path
        }, extraArguments: [], expectedStatus: 2, messageContains: ["not a SQLite database"]),
        Case(name: "named like a zip, but text", make: { folder in
            let url = folder.appendingPathComponent("container.zip")
            try Data("just some text, not an archive at all; long enough for any header".utf8).write(to: url)
            return url.path
        }, extraArguments: [], expectedStatus: 2, messageContains: ["is named like a zip archive but is not one", "copy the archive"]),
        Case(name: "truncated database", make: { folder in
            let url = try SampleStores.todo(in: folder, rows: 400)
            let data = try Data(contentsOf: url)
            try data.prefix(data.count / 2 + 100).write(to: url)
            return url.path
        }, extraArguments: [], expectedStatus: 2, messageContains: ["truncated"]),
        Case(name: "garbage Z_METADATA plist", make: { folder in
            try SampleStores.todo(in: folder) { w in
                try w.executeRaw("UPDATE Z_METADATA SET Z_PLIST = x'62706C6973743030DEADBEEF'")
            }.path
        }, extraArguments: [], expectedStatus: 2, messageContains: ["metadata is damaged", "Z_PLIST"]),
        Case(name: "-wal with the wrong page size", make: { folder in
            let url = try SampleStores.todo(in: folder, journal: .wal)
            // A WAL made by another database with 1024-byte pages.
            let other = folder.appendingPathComponent("other.db")
            let db = try Connection.open(path: other.path, mode: .create)
            try db.execute("PRAGMA page_size = 1024; PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (x); INSERT INTO t VALUES (1);")
            try db.disableCheckpointOnClose()
            try FileManager.default.copyItem(at: URL(fileURLWithPath: other.path + "-wal"), to: URL(fileURLWithPath: url.path + "-wal"))
            return url.path
        }, extraArguments: [], expectedStatus: 2, messageContains: ["1024-byte pages", "4096-byte pages"]),
        Case(name: "hot -journal", make: { folder in try HotJournal.store(in: folder).path },
             extraArguments: [], expectedStatus: 2, messageContains: ["hot rollback journal", "--roll-back-journal"]),
        Case(name: "hot -journal rolled back on request", make: { folder in try HotJournal.store(in: folder).path },
             extraArguments: ["--roll-back-journal"], expectedStatus: 0, messageContains: []),
        Case(name: "table name with quotes and spaces (odd, not bad: a normal result)", make: { folder in
            try SampleStores.todo(in: folder) { w in
                try w.executeRaw(#"CREATE TABLE "ZWEIRD ""NAME""; X" ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER )"#)
                try w.executeRaw(#"INSERT INTO Z_PRIMARYKEY VALUES (3, 'Weird "Name"; x', 0, 2)"#)
                try w.executeRaw(#"INSERT INTO "ZWEIRD ""NAME""; X" VALUES (1, 3, 1), (2, 3, 1)"#)
            }.path
        }, extraArguments: ["--format", "json"], expectedStatus: 0, messageContains: []),
        Case(name: "store in a read-only folder (read as usual)", make: { folder in
            let sub = folder.appendingPathComponent("readonly")
            try FileManager.default.createDirectory(at: sub, withIntermediateDirectories: true)
            let url = try SampleStores.todo(in: sub, journal: .wal) { w in
                try w.checkpoint()
                try w.transaction(.init(bundleID: "com.example.todo")) { try $0.insert("TodoList", ["name": .string("Later")]) }
            }
            try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: url.path)
            try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: sub.path)
            return url.path
        }, extraArguments: [], expectedStatus: 0, messageContains: []),
    ]

    @Test(arguments: cases)
    func badInput(_ c: Case) throws {
        let folder = try TemporaryFolder("bad-input")
        let scratchParent = try TemporaryFolder("scratch")
        let input = try c.make(folder.url)
        let before = try FolderSnapshot(folder.url)
        let result = try CLI.run(["inspect", input] + c.extraArguments, environment: ["TMPDIR": scratchParent.url.path])
        let after = try FolderSnapshot(folder.url)

        #expect(result.status == c.expectedStatus, "stdout: \(result.stdout)\nstderr: \(result.stderr)")
        #expect(before == after, "the input folder must be left byte-identical")
        #expect(try FileManager.default.contentsOfDirectory(atPath: scratchParent.url.path).isEmpty,
                "no scratch folder may be left behind")
        #expect(!result.stderr.contains("Fatal error"), "must not crash")
        if c.expectedStatus == 2 {
            let lines = result.stderr.split(separator: "\n")
            #expect(lines.count == 1, "one sentence: \(result.stderr)")
            #expect(result.stderr.hasPrefix("Error: "))
            #expect(result.stderr.contains(input) || result.stderr.contains(URL(fileURLWithPath: input).lastPathComponent))
            for word in c.messageContains { #expect(result.stderr.contains(word), "\(word) in \(result.stderr)") }
            #expect(result.stdout.isEmpty)
        } else {
            #expect(!result.stdout.isEmpty)
        }
    }

    @Test("odd entity and table names are quoted, counted and escaped in JSON")
    func hostileNamesAreCounted() throws {
        let folder = try TemporaryFolder("names")
        let input = try Self.cases.first { $0.name.hasPrefix("table name") }!.make(folder.url)
        let result = try CLI.run(["inspect", input, "--format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
        let entities = ((json?["stores"] as? [[String: Any]])?.first?["entities"] as? [[String: Any]]) ?? []
        let weird = try #require(entities.first { ($0["name"] as? String) == #"Weird "Name"; x"# })
        #expect(weird["rows"] as? Int == 2)
        #expect(weird["table"] as? String == #"ZWEIRD "NAME"; X"#)
    }

    @Test("usage errors: unknown option with a suggestion, missing argument, an empty argument, exit 2")
    func usageErrors() throws {
        let unknown = try CLI.run(["inspect", "--formt", "json", "x"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("Unknown option '--formt'. Did you mean '--format'?"))
        #expect(unknown.stderr.contains("Usage: storelens inspect"))
        // A bad value: its sentence says what to give; no 400-character usage line after it.
        let format = try CLI.run(["inspect", "x", "--format", "jsno"])
        #expect(format.status == 2)
        #expect(format.stderr.contains("use one of: text, json, markdown"), "\(format.stderr)")
        #expect(!format.stderr.contains("Usage:"), "\(format.stderr)")
        #expect(format.stderr.split(separator: "\n").count == 2, "the error and where help is: \(format.stderr)")
        let missing = try CLI.run(["inspect"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("Missing expected argument '<input>'"))
        let badValue = try CLI.run(["inspect", "x", "--format", "yaml"])
        #expect(badValue.status == 2)
        #expect(badValue.stderr.contains("'yaml' is invalid for '--format'"))
        let command = try CLI.run(["inspekt"])
        #expect(command.status == 2)
        #expect(command.stderr.contains("Did you mean 'inspect'?"))
        // An empty word (an unset variable) is refused, not read as the current folder.
        for arguments in [["inspect", ""], ["scan", ""], ["rows", "x", ""], ["inspect", "--", ""]] {
            let empty = try CLI.run(arguments)
            #expect(empty.status == 2, "\(arguments)")
            #expect(empty.stderr.contains("An empty argument was given"), "\(arguments): \(empty.stderr)")
        }
    }

    @Test("help is the same three ways and exits 0")
    func help() throws {
        let a = try CLI.run(["inspect", "--help"])
        let b = try CLI.run(["inspect", "-h"])
        let c = try CLI.run(["help", "inspect"])
        #expect(a.status == 0)
        #expect(a.stdout == b.stdout && b.stdout == c.stdout)
        #expect(a.stdout.hasPrefix("OVERVIEW: "))
        #expect(a.stdout.contains("USAGE: storelens inspect"))
        #expect(a.stdout.contains("(values: text, json, markdown; default: text)"))
    }
}
