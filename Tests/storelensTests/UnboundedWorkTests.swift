import Foundation
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// Small inputs that once made storelens do unbounded work. The tests assert the answer (or the
/// refusal), never a time: the bound shows as a memory cap the old code could not live within,
/// or as a refusal before the work.
@Suite("bounded work from small inputs")
struct UnboundedWorkTests {
    @Test("a 1 GiB sparse -shm: wal reads only what a -shm can hold (under a 600 MB address-space cap) and reports the same -shm facts")
    func sparseSharedMemory() throws {
        let folder = try TemporaryFolder("sparse-shm")
        try DemoContainer.write(into: folder.url)
        let store = folder.url.appendingPathComponent("Library/Application Support/default.store").path
        let before = try BoundedRun.run(["wal", store, "--format", "json"])
        #expect(before.status == 0, "\(before.stderr)")
        #expect(truncate(store + "-shm", 1 << 30) == 0)
        // Reading the whole -shm into memory cannot happen under this cap: the old code then lost
        // the -shm ("shorter than its header") instead of reporting it. The evidence is still hashed
        // in full (twice), so the hang bound is generous: on a loaded 2-core machine 30 s was not enough.
        let capped = try BoundedRun.run(["-c", "ulimit -v 600000; exec \"$0\" \"$@\"", ProjectPaths.executable().path,
                                         "wal", store, "--format", "json"], timeout: 180, tool: "/bin/sh")
        #expect(capped.status == 0, "\(capped.stderr)")
        #expect(capped.stdout == before.stdout, "the same report: only the header of a -shm is ever used")
    }

    @Test("merge refuses a results file whose first line is 100 MB at the speed of reading it: under a 10 CPU-second cap (it searched the line again with every MiB read)")
    func longMergeLine() throws {
        let folder = try TemporaryFolder("merge-long-line")
        let file = folder.path("results.jsonl")
        FileManager.default.createFile(atPath: file.path, contents: Data("{\"x\":\"".utf8))
        let handle = try FileHandle(forWritingTo: file)
        try handle.seekToEnd()
        let block = Data(repeating: UInt8(ascii: "a"), count: 1 << 20)
        for _ in 0 ..< 100 { try handle.write(contentsOf: block) }
        try handle.write(contentsOf: Data("\"}\n".utf8))
        try handle.close()
        let r = try BoundedRun.run(["-c", "ulimit -t 10; exec \"$0\" \"$@\"", ProjectPaths.executable().path, "merge", file.path],
                                   timeout: 120, tool: "/bin/sh")
        #expect(r.status == 2 && !r.crashed, "exit \(r.status): \(r.stderr.prefix(300))")
        #expect(r.stderr.contains("line 1 is longer than 64 MiB"), "\(r.stderr.prefix(300))")
    }

    @Test("the bytes a -shm can hold follow the WAL's frame count: one 32 KiB block for 4062 frames, one more per 4096")
    func sharedMemoryLimit() {
        #expect(SharedMemoryIndex.byteLimit(walFrames: 0) == 32768)
        #expect(SharedMemoryIndex.byteLimit(walFrames: 4062) == 32768)
        #expect(SharedMemoryIndex.byteLimit(walFrames: 4063) == 65536)
        #expect(SharedMemoryIndex.byteLimit(walFrames: 4062 + 4096) == 65536)
        #expect(SharedMemoryIndex.byteLimit(walFrames: 4062 + 4097) == 98304)
        #expect(SharedMemoryIndex.byteLimit(walFrames: Int.max) > 0, "no overflow on any frame count")
    }

    @Test("a 86 KB tar holding a 7 GiB sparse store is refused by --max-ratio before any work; a larger ratio lets it through")
    func sparseTarEntry() throws {
        let folder = try TemporaryFolder("sparse-tar")
        let tmp = try TemporaryFolder("sparse-tar-tmp")
        try DemoContainer.write(into: folder.path("c"))
        let store = folder.path("c/Library/Application Support/default.store").path
        // A small store's file grown to 7 GiB: all holes, which bsdtar stores as a sparse entry.
        #expect(truncate(store, 7 << 30) == 0)
        let tar = folder.path("sparse.tar")
        let made = try BoundedRun.run(["bsdtar", "-cf", tar.path, "-C", folder.path("c").path, "Library"], tool: "/usr/bin/env")
        try #require(made.status == 0, "bsdtar: \(made.stderr)")
        let tarBytes = try #require(try FileManager.default.attributesOfItem(atPath: tar.path)[.size] as? NSNumber).intValue
        #expect(tarBytes < 1 << 20, "the archive is small: \(tarBytes) bytes")
        for command in [["scan", tar.path], ["inspect", tar.path, "--store", "default.store"]] {
            let run = try BoundedRun.run(command, environment: ["TMPDIR": tmp.url.path])
            #expect(run.status == 2, "\(command): \(run.stderr)")
            #expect(run.stderr.contains("declares \(7 << 30) bytes") && run.stderr.contains("--max-ratio"), "\(command): \(run.stderr)")
            #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.url.path).isEmpty)
        }
    }

    @Test("a manifest whose store pattern is **/ 300 times audits exactly like the plain pattern")
    func manyDoubleStarManifest() throws {
        let folder = try TemporaryFolder("stars")
        try DemoContainer.write(into: folder.path("c"))
        let plain = folder.path("plain.json"), hostile = folder.path("hostile.json")
        try Data(DemoContainer.manifest.utf8).write(to: plain)
        let stars = String(repeating: "**/", count: 300)
        let text = DemoContainer.manifest.replacingOccurrences(of: "\"store\": \"", with: "\"store\": \"" + stars)
        #expect(text.utf8.count > 3000 && text.contains(stars + "Library/Application Support/default.store"))
        try Data(text.utf8).write(to: hostile)
        let expected = try BoundedRun.run(["audit", folder.path("c").path, "-m", plain.path, "--format", "json"])
        let got = try BoundedRun.run(["audit", folder.path("c").path, "-m", hostile.path, "--format", "json"])
        #expect(!got.timedOut)
        #expect(got.status == expected.status && got.status == 1, "\(got.stderr)")
        let strip = { (s: String) in s.split(separator: "\n").filter { !$0.contains("manifest") && !$0.contains("store\"") }.joined(separator: "\n") }
        #expect(strip(got.stdout) == strip(expected.stdout), "the same findings")
    }
}

/// Inputs past a limit are refused by their size before a byte is copied, and a file-size limit
/// (`ulimit -f`) met while copying is storelens' own failure, with its scratch removed.
@Suite("sizes checked before copying, and a file-size limit")
struct SizeBeforeCopyTests {
    /// `storelens ARGS` under `ulimit -f` (KiB) with a TMPDIR of its own, which must be empty after.
    static func limited(_ kib: Int, _ arguments: [String], environment: [String: String] = [:]) throws -> BoundedRun.Outcome {
        let tmp = try TemporaryFolder("size-limit-tmp")
        let outcome = try BoundedRun.run(["-c", "ulimit -f \(kib); exec \"$0\" \"$@\"", ProjectPaths.executable().path] + arguments,
                                         environment: environment.merging(["TMPDIR": tmp.url.path]) { $1 }, timeout: 120, tool: "/bin/sh")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.url.path).isEmpty, "scratch left after storelens \(arguments.joined(separator: " "))")
        return outcome
    }

    @Test("a sparse XML or binary store past the limit is refused by its size: never copied (a 1 MiB file-size cap is never met), every command, in place and with --copy")
    func sparseAtomicStores() throws {
        let folder = try TemporaryFolder("sparse-atomic")
        let xml = folder.path("big.storedata"), binary = folder.path("big.binarystore")
        try XMLStoreWriter.sample().write(to: xml)
        try BinaryStoreWriter(model: XMLStoreWriter.sampleModel).write(to: binary)
        for url in [xml, binary] { #expect(truncate(url.path, 64 << 20) == 0) }
        let before = try FolderSnapshot(folder.url)
        for url in [xml, binary] {
            for command in [["inspect", url.path], ["rows", url.path, "Library"], ["export", url.path, "--out", folder.path("out.sqlite").path], ["scan", url.path]] {
                for copy in [[String](), ["--copy"]] where command[0] != "scan" || copy.isEmpty {
                    let r = try Self.limited(1024, command + copy, environment: ["STORELENS_MAX_ATOMIC_STORE_BYTES": "4194304"])
                    let what = "\(command.joined(separator: " ")) \(copy.joined()): exit \(r.status), \(r.stderr.prefix(300))"
                    #expect(!r.crashed, "\(what)")
                    #expect(r.status == (command[0] == "scan" ? 0 : 2), "\(what)")
                    #expect((r.stdout + r.stderr).contains("more than the 4194304 storelens reads"), "\(what)")
                }
            }
        }
        #expect(try FolderSnapshot(folder.url) == before)
    }

    @Test("a file-size limit met while copying a store is storelens' own failure (exit 3), not SIGXFSZ, and leaves no scratch")
    func fileSizeLimit() throws {
        let folder = try TemporaryFolder("fsize")
        try DemoContainer.write(into: folder.url)
        let store = folder.url.appendingPathComponent("Library/Application Support/default.store").path
        for command in [["inspect", store, "--copy"], ["rows", store, "TodoItem", "--copy"], ["check", store, "--copy"]] {
            let r = try Self.limited(40, command)
            #expect(!r.signaled && r.status == 3, "\(command.joined(separator: " ")): exit \(r.status), \(r.stderr)")
            #expect(r.stderr.contains("storelens' own failure"), "\(r.stderr)")
        }
    }
}

/// recover on free space crafted to be costly: its cost follows its input and output, not their
/// square. Asserted as a CPU-time cap (`ulimit -t`) the quadratic code could not live within, as
/// the memory caps above are, never as a time.
@Suite("recover's cost on crafted free space")
struct CraftedFreeSpaceTests {
    @Test("40,000 freed copies of one history delete: recover finishes under a 60 CPU-second cap (each copy's place was searched for in a list of all the others)")
    func repeatedHistoryDelete() throws {
        let folder = try TemporaryFolder("crafted-achange")
        let url = try HostileCorpus.store(in: folder.url, walCommits: 0) { w in
            try w.executeRaw("PRAGMA secure_delete = OFF")
            try w.transaction(HostileCorpus.app, at: HostileCorpus.epoch) { try $0.delete("TodoItem", pk: 3) }
            try w.executeRaw("""
                INSERT INTO ACHANGE (Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID)
                SELECT Z_ENT, Z_OPT, ZCHANGETYPE, ZENTITY, ZENTITYPK, ZTRANSACTIONID FROM ACHANGE,
                  (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40000) SELECT i FROM n) WHERE ZCHANGETYPE = 2
                """)
            try w.executeRaw("DELETE FROM ACHANGE WHERE ZCHANGETYPE = 2")
        }
        let r = try BoundedRun.run(["-c", "ulimit -t 60; exec \"$0\" \"$@\"", ProjectPaths.executable().path, "recover", url.path, "--format", "json"],
                                   timeout: 300, tool: "/bin/sh")
        #expect(r.status == 0 && !r.crashed, "exit \(r.status): \(r.stderr.prefix(500))")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let versions = ((json["stores"] as? [[String: Any]])?.first?["versions"] as? [[String: Any]]) ?? []
        let deleted = try #require(versions.first { $0["entity"] as? String == "TodoItem" && $0["pk"] as? Int == 3 && $0["state"] as? String == "deleted" })
        #expect((deleted["finds"] as? [Any])?.count ?? 0 <= 100)
    }
}
