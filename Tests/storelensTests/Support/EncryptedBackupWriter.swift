import Foundation
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// The independent writer of encrypted test backups: scripts/encrypt-backup.py, run in a
/// virtualenv (under .build/) holding PyPI's `cryptography` and `iphone_backup_decrypt`. Made
/// once per test run; when PyPI cannot be reached the tests that need it are skipped, and under
/// CI (STORELENS_REQUIRE_BACKUP_WRITER=1) that is a failure instead.
enum EncryptedBackupWriter {
    static let venv = ProjectPaths.root().appendingPathComponent(".build/encrypted-backup-venv")
    static let script = ProjectPaths.root().appendingPathComponent("scripts/encrypt-backup.py")
    static let skipReason = "the encrypted-backup writer's virtualenv (cryptography, iphone_backup_decrypt from PyPI) could not be made; PyPI may be unreachable"

    /// The virtualenv's python, or why there is none (printed once).
    static let python: Result<URL, WriterUnavailable> = {
        let python = venv.appendingPathComponent("bin/python")
        if FileManager.default.isExecutableFile(atPath: python.path),
           (try? run(python, ["-c", "import cryptography, iphone_backup_decrypt"]))?.status == 0 {
            return .success(python)
        }
        do {
            try? FileManager.default.removeItem(at: venv)
            let made = try run(URL(fileURLWithPath: "/usr/bin/env"), ["python3", "-m", "venv", venv.path])
            guard made.status == 0 else { throw WriterUnavailable(reason: "python3 -m venv failed: \(made.stderr.suffix(300))") }
            let pip = try run(venv.appendingPathComponent("bin/pip"),
                              ["install", "--quiet", "--disable-pip-version-check", "--timeout", "30", "cryptography", "iphone_backup_decrypt"])
            guard pip.status == 0 else { throw WriterUnavailable(reason: "pip install failed: \(pip.stderr.suffix(300))") }
            return .success(python)
        } catch let error as WriterUnavailable {
            print("note: encrypted-backup tests skipped: \(error.reason)")
            return .failure(error)
        } catch {
            print("note: encrypted-backup tests skipped: \(error)")
            return .failure(WriterUnavailable(reason: "\(error)"))
        }
    }()

    static var available: Bool { (try? python.get()) != nil }

    struct WriterUnavailable: Error { let reason: String }

    /// Encrypts the plain backup `plain` into `out` with the password in `passwordFile`; with
    /// `verify`, iphone_backup_decrypt then decrypts every file and compares it with `plain`.
    @discardableResult
    static func encrypt(_ plain: URL, into out: URL, passwordFile: URL, damage: String? = nil, verify: Bool = true) throws -> String {
        // Few PBKDF2 rounds keep the tests quick; the format is the same as with iOS's 10,000,000.
        var arguments = [script.path, plain.path, out.path, passwordFile.path, "--dpic", "2000", "--iter", "100"]
        if let damage { arguments += ["--damage", damage] }
        if verify { arguments.append("--verify") }
        let result = try run(try python.get(), arguments)
        guard result.status == 0 else { throw WriterUnavailable(reason: "encrypt-backup.py failed: \(result.stderr)") }
        return result.stdout
    }

    struct Ran { let status: Int32; let stdout: String; let stderr: String }

    static func run(_ executable: URL, _ arguments: [String]) throws -> Ran {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Ran(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                   stderr: String(decoding: errData, as: UTF8.self))
    }
}
