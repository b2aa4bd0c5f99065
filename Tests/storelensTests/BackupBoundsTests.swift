import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// A backup's Manifest.plist and an encrypted Manifest.db are checked against the sizes they can
/// hold before they are read or decrypted: a sparse 2 GiB one is refused at once, in bounded
/// memory, with nothing decrypted into the working folder.
@Suite("backup manifests are checked before they are read")
struct BackupBoundsTests {
    /// Peak resident memory of one run, in KB, by /usr/bin/time (GNU time, `make deps`), or nil
    /// where it is not installed.
    static func peakKB(_ arguments: [String], environment: [String: String]) throws -> (status: Int32, stderr: String, peakKB: Int)? {
        guard FileManager.default.isExecutableFile(atPath: "/usr/bin/time") else { return nil }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/time")
        process.arguments = ["-f", "peak-kb=%M", ProjectPaths.executable().path] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        let err = Pipe()
        process.standardError = err
        try process.run()
        let data = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard let line = text.split(separator: "\n").last(where: { $0.hasPrefix("peak-kb=") }), let kb = Int(line.dropFirst(8)) else { return nil }
        return (process.terminationStatus, text, kb)
    }

    @Test("a sparse 2 GiB Manifest.plist: exit 2 naming it, in far less memory than its size")
    func sparseManifestPlist() throws {
        let folder = try TemporaryFolder("bounds-plist")
        try DemoContainer.write(into: folder.path("container"))
        let backup = folder.path("backup")
        try PlainBackup.write(of: folder.path("container"), at: backup, domain: "AppDomain-com.example.todo")
        let plist = backup.appendingPathComponent("Manifest.plist")
        #expect(truncate(plist.path, 2 << 30) == 0)
        let result = try CLI.run(["scan", backup.path])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("Manifest.plist") && result.stderr.contains("2147483648 bytes"), "\(result.stderr)")
        let tmp = folder.path("tmp")
        try FileManager.default.createDirectory(at: tmp, withIntermediateDirectories: true)
        if let measured = try Self.peakKB(["scan", backup.path], environment: ["TMPDIR": tmp.path]) {
            #expect(measured.status == 2)
            #expect(measured.peakKB < 200_000, "peak \(measured.peakKB) KB for a 2 GiB plist")
        }
    }

    @Test("an encrypted Manifest.db made sparse to 2 GiB, or padded with blocks whose padding still checks: refused before decryption",
          .enabled(if: EncryptedBackupWriter.available, "\(EncryptedBackupWriter.skipReason)"))
    func encryptedManifestDB() throws {
        for damage in ["sparse", "extra-blocks"] {
            let twins = try BackupTwins("bounds-\(damage)")
            let manifest = twins.encrypted.appendingPathComponent("Manifest.db")
            var bytes = try Data(contentsOf: manifest)
            if damage == "sparse" {
                #expect(truncate(manifest.path, 2 << 30) == 0)
            } else {
                // Any block, then the last two again: the last block still decrypts to valid padding,
                // but the file now decrypts to 48 bytes more than its SQLite header declares.
                let lastTwo = bytes.suffix(32)
                bytes.append(Data(repeating: 0x41, count: 16))
                bytes.append(lastTwo)
                try bytes.write(to: manifest)
            }
            let result = try twins.run(["inspect", twins.encrypted.path, "--keep-scratch"])
            #expect(result.status == 2, "\(damage): \(result.stderr)")
            #expect(result.stderr.contains("Manifest.db"), "\(damage): \(result.stderr)")
            if damage == "extra-blocks" { #expect(result.stderr.contains("SQLite header declares"), "\(result.stderr)") }
            // Nothing was decrypted: the kept working folder holds no file at all.
            var files: [String] = []
            let walker = FileManager.default.enumerator(at: twins.tmp, includingPropertiesForKeys: [.isRegularFileKey])
            while let url = walker?.nextObject() as? URL {
                if (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true { files.append(url.path) }
            }
            #expect(files.isEmpty, "\(damage): decrypted before the check: \(files)")
            try FileManager.default.removeItem(at: twins.tmp)
            try FileManager.default.createDirectory(at: twins.tmp, withIntermediateDirectories: true)
            if let measured = try Self.peakKB(["inspect", twins.encrypted.path, "--password-file", twins.passwordFile.path],
                                              environment: ["TMPDIR": twins.tmp.path]) {
                #expect(measured.status == 2 && measured.peakKB < 200_000, "\(damage): peak \(measured.peakKB) KB")
            }
        }
    }
}
