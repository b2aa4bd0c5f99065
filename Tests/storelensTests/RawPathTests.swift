import Foundation
import StoreTestSupport
import Testing

/// Paths are bytes: a folder pulled from a device may be named in another encoding (`ff fe`).
/// Swift repairs such a name to U+FFFD, which names nothing; storelens reads the folder by its
/// bytes and names it as typed (`bad\xFF\xFE`). The names are made and passed by the shell,
/// which keeps bytes as they are.
@Suite("paths that are not UTF-8")
struct RawPathTests {
    /// Runs storelens from `folder` with `arguments`, where `@FF` and `@FE` stand for those bytes.
    static func run(in folder: URL, _ arguments: [String]) throws -> BoundedRun.Outcome {
        let script = "cd \"$1\" && shift && bin=\"$1\" && shift && args=() && for a in \"$@\"; do "
            + "args+=(\"$(printf '%s' \"$a\" | sed -e 's/@FF/\\xff/g' -e 's/@FE/\\xfe/g')\"); done && exec \"$bin\" \"${args[@]}\""
        return try BoundedRun.run(["-c", script, "bash", folder.path, ProjectPaths.executable().path] + arguments, tool: "/bin/bash")
    }

    /// Every file below `folder` with its SHA-256, read by the shell (bytes as they are).
    static func snapshot(_ folder: URL) throws -> String {
        try BoundedRun.run(["-c", "cd \"$1\" && find . -type f -print0 | sort -z | xargs -0 sha256sum; find . | sort | wc -l", "sh", folder.path],
                           tool: "/bin/sh").stdout
    }

    /// `bad\xFF\xFE/Store.sqlite` and `bad\xFE/Store.sqlite` (two names Swift would repair alike),
    /// and a store whose own name is not UTF-8.
    static func evidence() throws -> TemporaryFolder {
        let folder = try TemporaryFolder("raw-paths")
        let todo = try SampleStores.todo(in: folder.url).path
        let made = try BoundedRun.run(["-c", """
            cd "$1" && for d in "$(printf 'bad\\377\\376')" "$(printf 'bad\\376')"; do mkdir -p "pulled/$d" && cp "$2" "pulled/$d/"; done \
            && cp "$2" "pulled/$(printf 'own\\377').sqlite" && rm "$2"
            """, "sh", folder.url.path, todo], tool: "/bin/sh")
        #expect(made.status == 0, "\(made.stderr)")
        return folder
    }

    @Test("a store in a folder named in another encoding: every command reads it in place and with --copy, named by its bytes, evidence unchanged")
    func folderNotUTF8() throws {
        let folder = try Self.evidence()
        let before = try Self.snapshot(folder.url)
        for copy in [[], ["--copy"]] {
            for command in [["inspect"], ["check"], ["rows", "TodoItem", "--format", "jsonl"], ["history"], ["wal"], ["recover"]] {
                let r = try Self.run(in: folder.url, [command[0], "pulled/bad@FF@FE/Store.sqlite"] + command.dropFirst() + copy)
                #expect(r.status == 0 || (command[0] == "check" && r.status == 1), "\(command) \(copy): \(r.status) \(r.stderr)")
                #expect(!r.stderr.contains("/proc/self"), "\(command): \(r.stderr)")
                if command[0] == "rows" { #expect(r.stdout.split(separator: "\n").count == 50) }
                if command[0] == "inspect" { #expect(r.stdout.contains("bad\\xFF\\xFE/Store.sqlite"), "\(r.stdout)") }
            }
        }
        let json = try Self.run(in: folder.url, ["inspect", "pulled/bad@FF@FE/Store.sqlite", "--format", "json"])
        #expect(json.stdout.contains("\"pulled/bad\\\\xFF\\\\xFE/Store.sqlite\""), "\(json.stdout.prefix(400))")
        #expect(try Self.snapshot(folder.url) == before)
    }

    @Test("scan of the parent finds the stores inside folders not named in UTF-8, tells apart two names Swift repairs alike, and says why a store whose own name is not UTF-8 is skipped")
    func scanParent() throws {
        let folder = try Self.evidence()
        let before = try Self.snapshot(folder.url)
        let scan = try CLI.run(["scan", folder.path("pulled").path, "--format", "json"])
        #expect(scan.status == 0, "\(scan.stderr)")
        #expect(scan.stdout.contains("\"bad\\\\xFF\\\\xFE/Store.sqlite\"") && scan.stdout.contains("\"bad\\\\xFE/Store.sqlite\""), "\(scan.stdout)")
        #expect(!scan.stdout.contains("\u{FFFD}") && !scan.stdout.contains("/proc/self"))
        #expect(scan.stdout.contains("own\\\\xFF.sqlite") && scan.stdout.contains("copy it and its sidecars to UTF-8 names"), "\(scan.stdout)")
        // Both given at once: two inputs, not one (they are different folders).
        let both = try Self.run(in: folder.url, ["inspect", "pulled/bad@FF@FE/Store.sqlite", "pulled/bad@FE/Store.sqlite", "--format", "json"])
        #expect(both.status == 0, "\(both.stderr)")
        #expect(both.stdout.contains("bad\\\\xFF\\\\xFE/Store.sqlite") && both.stdout.contains("bad\\\\xFE/Store.sqlite"))
        #expect(try Self.snapshot(folder.url) == before)
    }

    @Test("a file whose own name is not UTF-8, and a value that is no path: refused with exit 2, saying what and how")
    func refusals() throws {
        let folder = try Self.evidence()
        let own = try Self.run(in: folder.url, ["inspect", "pulled/own@FF.sqlite"])
        #expect(own.status == 2)
        #expect(own.stderr.contains("own\\xFF.sqlite) is not valid UTF-8") && own.stderr.contains("cp"), "\(own.stderr)")
        let entity = try Self.run(in: folder.url, ["rows", "pulled/bad@FE/Store.sqlite", "Todo@FF"])
        #expect(entity.status == 2 && entity.stderr.contains("Todo\\xFF"), "\(entity.stderr)")
    }
}
