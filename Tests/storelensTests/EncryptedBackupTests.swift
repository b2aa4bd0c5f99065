import Foundation
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// Encrypted Finder/iTunes backups: decrypted only into the scratch folder, read by
/// every command as the unencrypted twin is, the password never written anywhere.
@Suite("encrypted backups")
struct EncryptedBackupTests {
    typealias Twins = BackupTwins
    static let walPath = "Library/Application Support/default.store-wal"

    /// Every byte written: stdout, stderr and each file under `folders`; the password's bytes
    /// (and the password without its last character, in case a prefix leaked) appear in none.
    static func expectPasswordAbsent(_ results: [CommandResult], files folders: [URL]) throws {
        let needles = [Twins.password, String(Twins.password.dropLast())]
        for result in results {
            for needle in needles {
                #expect(!result.stdout.contains(needle) && !result.stderr.contains(needle), "the password appeared in a command's output")
            }
        }
        for folder in folders {
            let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey])
            while let url = walker?.nextObject() as? URL {
                guard (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true,
                      url.lastPathComponent != "password.txt" else { continue }
                let data = try Data(contentsOf: url)
                for needle in needles {
                    #expect(data.range(of: Data(needle.utf8)) == nil, "the password appeared in \(url.path)")
                }
            }
        }
    }

    @Test("under CI the encrypted-backup writer is available (STORELENS_REQUIRE_BACKUP_WRITER=1)",
          .enabled(if: ProjectPaths.isRequired("STORELENS_REQUIRE_BACKUP_WRITER"), "a requirement only where STORELENS_REQUIRE_BACKUP_WRITER=1 (.ci/run sets it); elsewhere the tests that need it skip with their own reason"))
    func writerRequired() {
        #expect(EncryptedBackupWriter.available, "STORELENS_REQUIRE_BACKUP_WRITER=1 but \(EncryptedBackupWriter.skipReason)")
    }

    @Test("right password: inspect, check, audit, scan, wal, rows, schema and history print what they print for the unencrypted twin; report works",
          .enabled(if: EncryptedBackupWriter.available, "\(EncryptedBackupWriter.skipReason)"))
    func sameAsPlainTwin() throws {
        let twins = try Twins("same")
        let before = try FolderSnapshot(twins.encrypted.deletingLastPathComponent())
        let manifest = ProjectPaths.root().appendingPathComponent("Fixtures/demo-container.storelens.json").path
        var results: [CommandResult] = []
        let commands: [(arguments: [String], after: [String])] = [
            (["inspect", "--format", "json"], []), (["check", "--format", "json"], []), (["audit", "--manifest", manifest, "--format", "json"], []),
            (["scan", "--format", "json"], []), (["wal", "--store", "default.store", "--format", "json"], []),
            (["rows", "--store", "default.store", "--format", "json"], ["TodoItem"]),
            (["schema", "--store", "default.store", "--format", "json"], []), (["history", "--store", "default.store", "--format", "json"], []),
        ]
        for (command, after) in commands {
            let plain = try twins.run(command + [twins.plain.path] + after, password: false)
            let encrypted = try twins.run(command + [twins.encrypted.path] + after)
            results += [plain, encrypted]
            #expect(encrypted.status == plain.status, "\(command[0]): \(encrypted.stderr)")
            #expect(!plain.stdout.isEmpty, "\(command[0]): \(plain.stderr)")
            #expect(encrypted.stdout.replacingOccurrences(of: twins.encrypted.path, with: twins.plain.path) == plain.stdout,
                    "\(command[0]) --format json differs between the encrypted backup and its plain twin")
            try twins.expectNoScratchLeft("after \(command[0])")
        }
        // Stores are named Domain/relativePath, as for a plain backup.
        #expect(results[7].stdout.contains("\(Twins.domain)/Library/Application Support/default.store"))
        // report writes its HTML file (outside the evidence); the password must not be in it either.
        let html = twins.folder.path("report.html")
        let report = try twins.run(["report", twins.encrypted.path, "--out", html.path])
        #expect(report.status == 0, "\(report.stderr)")
        #expect(try String(contentsOf: html, encoding: .utf8).contains("default.store"))
        results.append(report)
        // The password from the variable works as from the file.
        let fromVariable = try twins.run(["inspect", "--format", "json", twins.encrypted.path], password: false,
                                         environment: ["STORELENS_BACKUP_PASSWORD": Twins.password])
        #expect(fromVariable.status == 0, "\(fromVariable.stderr)")
        #expect(fromVariable.stdout == results[1].stdout)
        results.append(fromVariable)
        #expect(try FolderSnapshot(twins.encrypted.deletingLastPathComponent()) == before, "the encrypted backup was changed or added to")
        try Self.expectPasswordAbsent(results, files: [twins.folder.url])
    }

    @Test("--evidence records the encrypted originals' hashes and each decrypted file's plaintext hash",
          .enabled(if: EncryptedBackupWriter.available, "\(EncryptedBackupWriter.skipReason)"))
    func evidence() throws {
        let twins = try Twins("evidence")
        let evidence = twins.folder.path("evidence.json")
        let result = try twins.run(["scan", "--evidence", evidence.path, twins.encrypted.path])
        #expect(result.status == 0, "\(result.stderr)")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: evidence)) as? [String: Any])
        let input = try #require((json["inputs"] as? [[String: Any]])?.first)
        #expect(input["encrypted"] as? Bool == true)
        let decrypted = try #require(input["decrypted"] as? [[String: Any]])
        let originals = try #require(json["originals"] as? [[String: Any]])
        let originalHashes = Dictionary(uniqueKeysWithValues: originals.compactMap { o in (o["path"] as? String).map { ($0, o["sha256"] as? String) } })
        for relative in ["Library/Application Support/default.store", Self.walPath, "Library/Application Support/default.store-shm",
                         "Library/Application Support/Model.sqlite"] {
            let id = twins.fileID(relative)
            let entry = try #require(decrypted.first { $0["path"] as? String == "\(Twins.domain)/\(relative)" }, "\(relative) not listed")
            let encryptedFile = twins.encrypted.appendingPathComponent("\(id.prefix(2))/\(id)")
            let plainFile = twins.plain.appendingPathComponent("\(id.prefix(2))/\(id)")
            // The hashes are the files' own: the encrypted original in the backup, the plain twin's bytes.
            #expect(entry["encryptedSHA256"] as? String == (try SHA256.hexOfFile(at: encryptedFile)))
            #expect(entry["plaintextSHA256"] as? String == (try SHA256.hexOfFile(at: plainFile)))
            #expect(entry["original"] as? String == encryptedFile.path)
            #expect(originalHashes[encryptedFile.path] == (try SHA256.hexOfFile(at: encryptedFile)), "\(relative)'s original is in the ledger")
        }
        #expect(originalHashes[twins.encrypted.appendingPathComponent("Manifest.db").path] != nil)
        #expect(originalHashes[twins.encrypted.appendingPathComponent("Manifest.plist").path] != nil)
        // A plain file is not decrypted: nothing but stores and their sidecars leaves the backup.
        #expect(!decrypted.contains { ($0["path"] as? String)?.hasSuffix("readme.txt") == true })
        try twins.expectNoScratchLeft()
        try Self.expectPasswordAbsent([result], files: [twins.folder.url])
    }

    @Test("a wrong password is exit 2 with the keybag sentence, before any file is decrypted",
          .enabled(if: EncryptedBackupWriter.available, "\(EncryptedBackupWriter.skipReason)"))
    func wrongPassword() throws {
        let twins = try Twins("wrong", verify: false)
        let wrong = twins.folder.path("wrong.txt")
        try Data("correct horse ✓ battery 91\n".utf8).write(to: wrong)
        // --keep-scratch keeps the working folder: it must hold no decrypted byte.
        let result = try CLI.run(["inspect", "--keep-scratch", "--password-file", wrong.path, twins.encrypted.path],
                                 environment: ["TMPDIR": twins.tmp.path], standardInput: FileHandle.nullDevice)
        #expect(result.status == 2)
        #expect(result.stderr.contains("the password does not unlock this backup's keybag"))
        #expect(result.stderr.contains(twins.encrypted.path))
        let kept = try FileManager.default.contentsOfDirectory(at: twins.tmp, includingPropertiesForKeys: nil)
        for folder in kept {
            let inside = try FileManager.default.subpathsOfDirectory(atPath: folder.path)
            #expect(inside.isEmpty, "decrypted before the password was checked: \(inside)")
            try FileManager.default.removeItem(at: folder)
        }
        try Self.expectPasswordAbsent([result], files: [twins.folder.url])
    }

    @Test("no password, or one on the command line: a sentence saying how to give it, the value never echoed",
          .enabled(if: EncryptedBackupWriter.available, "\(EncryptedBackupWriter.skipReason)"))
    func noPassword() throws {
        let twins = try Twins("nopassword", verify: false)
        let none = try twins.run(["inspect", twins.encrypted.path], password: false)
        #expect(none.status == 2)
        #expect(none.stderr.contains("is an encrypted backup and no password was given"))
        #expect(none.stderr.contains("--password-file"))
        for form in [["--password", Twins.password], ["--password=\(Twins.password)"]] {
            let refused = try twins.run(["inspect"] + form + [twins.encrypted.path], password: false)
            #expect(refused.status == 2)
            #expect(refused.stderr.contains("never takes a password as a command-line value"))
            try Self.expectPasswordAbsent([refused], files: [])
        }
        let missingFile = try CLI.run(["inspect", "--password-file", twins.folder.path("nope.txt").path, twins.encrypted.path],
                                      environment: ["TMPDIR": twins.tmp.path], standardInput: FileHandle.nullDevice)
        #expect(missingFile.status == 2)
        #expect(missingFile.stderr.contains("nope.txt"))
        try twins.expectNoScratchLeft()
    }

    @Test("--password-file <(…): a process substitution (/dev/fd/N) unlocks the backup as a file does; a pipe nobody writes to ends with a clear sentence, not a hang; too long, a device refused",
          .enabled(if: EncryptedBackupWriter.available, "\(EncryptedBackupWriter.skipReason)"))
    func passwordFromPipe() throws {
        let twins = try Twins("pipes", verify: false)
        let viaFile = try twins.run(["inspect", "--format", "json", twins.encrypted.path])
        #expect(viaFile.status == 0, "\(viaFile.stderr)")
        /// storelens run by bash with `--password-file` replaced by what `given` says (bash syntax).
        func shell(_ given: String, environment: [String: String] = [:]) throws -> BoundedRun.Outcome {
            let script = "exec \"$0\" inspect --format json --password-file \(given) \"$1\""
            var env = environment
            env["TMPDIR"] = twins.tmp.path
            env["STORELENS_BACKUP_PASSWORD"] = nil
            return try BoundedRun.run(["-c", script, ProjectPaths.executable().path, twins.encrypted.path],
                                      environment: env, timeout: 120, tool: "/bin/bash")
        }
        // As docs/backups.md shows it: the shell hands storelens /dev/fd/N, a pipe's read end.
        let substituted = try shell("<(printf '%s\\n' \"$PW\")", environment: ["PW": Twins.password])
        #expect(!substituted.timedOut && substituted.status == 0, "\(substituted.stderr)")
        #expect(substituted.stdout == viaFile.stdout, "the same account as with the password in a file")

        // A named pipe nobody writes to: the wait ends (1 s here), exit 2, one sentence.
        let silent = twins.folder.path("silent.fifo")
        #expect(mkfifo(silent.path, 0o600) == 0)
        let waited = try shell("\"$PIPE\"", environment: ["PIPE": silent.path, "STORELENS_PASSWORD_WAIT_SECONDS": "1"])
        #expect(!waited.timedOut && waited.status == 2, "\(waited.stderr)")
        #expect(waited.stderr.contains("nothing arrived on the password file \(silent.path) within 1 s"), "\(waited.stderr)")
        #expect(waited.stderr.split(separator: "\n").count == 1 && waited.stdout.isEmpty)

        // More than the bound through a pipe; a device.
        let long = try shell("<(head -c 10000 /dev/zero | tr '\\0' p)")
        #expect(!long.timedOut && long.status == 2 && long.stderr.contains("holds more than \(4096) bytes"), "\(long.stderr)")
        #expect(!long.stderr.contains("pppp"))
        let device = try shell("/dev/null")
        #expect(device.status == 2 && device.stderr.contains("is a character device; give a regular file, a named pipe or a process substitution"), "\(device.stderr)")
        try twins.expectNoScratchLeft()
        for outcome in [substituted, waited, long, device] {
            #expect(!outcome.stdout.contains(Twins.password) && !outcome.stderr.contains(Twins.password), "the password appeared in a command's output")
        }
        try Self.expectPasswordAbsent([], files: [twins.folder.url])
    }

    static var hasScript: Bool {
        #if os(Linux)
        return FileManager.default.isExecutableFile(atPath: "/usr/bin/script")
        #else
        return false
        #endif
    }

    /// Runs `storelens ARGS` on a pseudo-terminal (util-linux `script`), typing `keys` once the
    /// prompt is on the screen; returns everything the terminal showed and the exit status.
    static func onTerminal(_ arguments: [String], typing keys: String, tmp: URL) throws -> (screen: String, status: Int32) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/script")
        let command = ([ProjectPaths.executable().path] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
            .joined(separator: " ") + "; echo \"status=$?\""
        process.arguments = ["-qec", command, "/dev/null"]
        var env = ProcessInfo.processInfo.environment
        env["TMPDIR"] = tmp.path
        env["STORELENS_BACKUP_PASSWORD"] = nil
        process.environment = env
        let input = Pipe(), output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // A watchdog: a prompt that never comes must fail the test, not hang it.
        let watchdog = DispatchWorkItem { process.terminate() }
        DispatchQueue.global().asyncAfter(deadline: .now() + 120, execute: watchdog)
        defer { watchdog.cancel() }
        var screen = Data()
        while !String(decoding: screen, as: UTF8.self).contains("Password for the encrypted backup") {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            screen += chunk
        }
        // The prompt is shown once echo is already off.
        input.fileHandleForWriting.write(Data(keys.utf8))
        screen += output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: screen, as: UTF8.self)
        let status = text.range(of: "status=").flatMap { Int32(text[$0.upperBound...].prefix { $0.isNumber }) } ?? -1
        return (text, status)
    }

    @Test("on a terminal the password is asked for without echo; Ctrl-C cancels and gives the terminal back",
          .enabled(if: EncryptedBackupWriter.available && hasScript, "needs the encrypted-backup writer and util-linux script (Linux)"))
    func terminalPrompt() throws {
        let twins = try Twins("terminal", verify: false)
        let typed = try Self.onTerminal(["inspect", "--store", "default.store", twins.encrypted.path], typing: Twins.password + "\r", tmp: twins.tmp)
        #expect(typed.status == 0, "\(typed.screen)")
        #expect(typed.screen.contains("ZTODOITEM") || typed.screen.contains("TodoItem"))
        #expect(!typed.screen.contains(Twins.password), "the password was echoed")
        #expect(!typed.screen.contains(String(Twins.password.prefix(8))), "part of the password was echoed")
        let cancelled = try Self.onTerminal(["inspect", twins.encrypted.path], typing: "corr\u{03}", tmp: twins.tmp)
        #expect(cancelled.status == 2, "\(cancelled.screen)")
        #expect(cancelled.screen.contains("the prompt was cancelled"))
        try twins.expectNoScratchLeft()
    }

    /// A damaged backup, what the error must name, and the words that say what is wrong.
    static let damages: [(damage: String, names: String, says: String)] = [
        ("truncated-keybag", "Manifest.plist", "BackupKeyBag cannot be used"),
        // The first file whose key cannot be unwrapped is named, whichever it is.
        ("missing-class-key", "\(Twins.domain)/", "is encrypted with protection class 3, for which the backup's keybag holds no key"),
        ("bad-padding:\(walPath)", "default.store-wal", "valid padding"),
        ("bad-manifest", "Manifest.db", "does not decrypt"),
        ("pre-10.2", "9.3.5", "before iOS 10.2"),
    ]

    @Test("damaged encrypted backups: a clear exit-2 sentence naming the file, no plaintext left, nothing beside the evidence",
          .enabled(if: EncryptedBackupWriter.available, "\(EncryptedBackupWriter.skipReason)"),
          arguments: damages.indices)
    func damaged(_ index: Int) throws {
        let (damage, names, says) = Self.damages[index]
        let twins = try Twins("damaged-\(index)", damage: damage, verify: false)
        let before = try FolderSnapshot(twins.encrypted.deletingLastPathComponent())
        var results: [CommandResult] = []
        for command in [["inspect"], ["check", "--format", "json"], ["scan"]] {
            let result = try twins.run(command + [twins.encrypted.path])
            results.append(result)
            #expect(result.status == 2, "\(damage), \(command[0]): \(result.stderr)")
            #expect(result.stderr.contains(names), "\(damage): \(result.stderr)")
            #expect(result.stderr.contains(says), "\(damage): \(result.stderr)")
            #expect(!result.stderr.contains("internal error"))
            try twins.expectNoScratchLeft("after \(command[0]) on \(damage)")
        }
        #expect(try FolderSnapshot(twins.encrypted.deletingLastPathComponent()) == before)
        try Self.expectPasswordAbsent(results, files: [twins.folder.url])
    }
}
