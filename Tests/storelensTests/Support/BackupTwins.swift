import Foundation
import StoreBuilder
import StoreFormats
import StoreTestSupport
import Testing

/// A SwiftData store with -wal and -shm, a Core Data store and plain files, as a plain backup
/// and its encrypted twin; TMPDIR for the commands is a folder of the test's own.
struct BackupTwins {
    static let password = "correct horse ✓ battery 19"
    static let domain = "AppDomain-com.example.todo"

    let folder: TemporaryFolder
    let plain: URL
    let encrypted: URL
    let passwordFile: URL
    let tmp: URL

    init(_ name: String, damage: String? = nil, verify: Bool = true) throws {
        folder = try TemporaryFolder("encbackup-\(name)")
        let container = folder.path("container")
        try DemoContainer.write(into: container)
        try Data("a plain file\n".utf8).write(to: container.appendingPathComponent("Documents/readme.txt"))
        plain = folder.path("plain/00008120-001A2B3C4D5E802E")
        try PlainBackup.write(of: container, at: plain, domain: Self.domain)
        passwordFile = folder.path("password.txt")
        // As `echo` writes it: one trailing newline, which is not part of the password.
        try Data((Self.password + "\n").utf8).write(to: passwordFile)
        encrypted = folder.path("encrypted/00008120-001A2B3C4D5E802E")
        try FileManager.default.createDirectory(at: encrypted.deletingLastPathComponent(), withIntermediateDirectories: true)
        try EncryptedBackupWriter.encrypt(plain, into: encrypted, passwordFile: passwordFile, damage: damage, verify: verify)
        tmp = folder.path("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
    }

    func run(_ arguments: [String], password: Bool = true, environment: [String: String] = [:]) throws -> CommandResult {
        var env = environment
        env["TMPDIR"] = tmp.path
        return try CLI.run(arguments + (password ? ["--password-file", passwordFile.path] : []), environment: env,
                           standardInput: FileHandle.nullDevice)
    }

    /// The fileID (hashed name) of `relative` in the app domain.
    func fileID(_ relative: String) -> String {
        String(SHA256.hex(Data("\(Self.domain)-\(relative)".utf8)).prefix(40))
    }

    /// Nothing of ours is left in TMPDIR: the scratch folder and its plaintext are gone.
    func expectNoScratchLeft(_ comment: Comment? = nil) throws {
        let left = try FileManager.default.contentsOfDirectory(atPath: tmp.path)
        #expect(left.isEmpty, "left in TMPDIR: \(left) \(comment?.description ?? "")")
    }
}
