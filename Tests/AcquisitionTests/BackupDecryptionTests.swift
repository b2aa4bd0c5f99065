@testable import Acquisition
import Foundation
import StoreFormats
import StoreTestSupport
import Testing

/// The pieces of encrypted-backup reading on their own: the password sources, the keybag's TLV
/// parser, RFC 3394 unwrap and the streaming CBC decryption (checked against `openssl enc`).
@Suite("backup decryption pieces")
struct BackupDecryptionTests {
    static func bytes(_ secret: SecretBytes) -> [UInt8] { secret.withUnsafeBytes { Array($0) } }

    @Test("a password file loses one trailing newline (\\n or \\r\\n), no more; empty and missing files are refused by name")
    func passwordFile() throws {
        let folder = try TemporaryFolder("pwfile")
        for (content, expected) in [("pw\n", "pw"), ("pw\r\n", "pw"), ("pw\n\n", "pw\n"), ("pw", "pw"), (" pw \n", " pw ")] {
            let url = folder.path("p-\(expected.count)-\(content.count)")
            try Data(content.utf8).write(to: url)
            #expect(Self.bytes(try BackupPasswordSource.readFile(url.path)) == Array(expected.utf8), "\(content.debugDescription)")
        }
        let empty = folder.path("empty")
        try Data("\n".utf8).write(to: empty)
        #expect(throws: BackupPasswordError.empty(source: "the password file \(empty.path)")) { try BackupPasswordSource.readFile(empty.path) }
        let missing = folder.path("missing").path
        let error = try #require(throws: BackupPasswordError.self) { try BackupPasswordSource.readFile(missing) }
        #expect("\(error)".contains(missing))
    }

    @Test("a password file may be a named pipe: written after a while it is read; one nobody writes to ends at the wait with a clear error; too long, a folder, a device are refused")
    func passwordPipe() throws {
        let folder = try TemporaryFolder("pwfifo")
        let fifo = folder.path("late").path
        #expect(mkfifo(fifo, 0o600) == 0)
        // The writer opens the pipe only after the reader waits (a thread, so no timing is assumed:
        // the reader waits up to 60 s for it).
        let writer = Thread {
            usleep(200_000)
            let fd = open(fifo, O_WRONLY)
            guard fd >= 0 else { return }
            _ = "pw from a pipe\n".withCString { write(fd, $0, strlen($0)) }
            close(fd)
        }
        writer.start()
        #expect(Self.bytes(try BackupPasswordSource.readFile(fifo, waitMilliseconds: 60_000)) == Array("pw from a pipe".utf8))

        let silent = folder.path("silent").path
        #expect(mkfifo(silent, 0o600) == 0)
        #expect(throws: BackupPasswordError.nothingArrived(path: silent, seconds: 1, received: false)) {
            try BackupPasswordSource.readFile(silent, waitMilliseconds: 300)
        }
        let error = BackupPasswordError.nothingArrived(path: silent, seconds: 1, received: false)
        #expect(error.description.contains("nothing arrived on the password file \(silent) within 1 s"))

        // Longer than the bound, through a pipe and from a file: refused, the bytes never echoed.
        let long = String(repeating: "p", count: BackupPasswordSource.maxBytes + 100)
        let longFIFO = folder.path("long").path
        #expect(mkfifo(longFIFO, 0o600) == 0)
        let longWriter = Thread {
            let fd = open(longFIFO, O_WRONLY)
            guard fd >= 0 else { return }
            _ = long.withCString { write(fd, $0, strlen($0)) }
            close(fd)
        }
        longWriter.start()
        let tooLong = try #require(throws: BackupPasswordError.self) { try BackupPasswordSource.readFile(longFIFO, waitMilliseconds: 60_000) }
        #expect(tooLong == .tooLong(source: "the password file \(longFIFO)", limit: BackupPasswordSource.maxBytes))
        #expect(!tooLong.description.contains("ppppp"))
        let longFile = folder.path("long.txt")
        try Data(long.utf8).write(to: longFile)
        #expect(throws: BackupPasswordError.tooLong(source: "the password file \(longFile.path)", limit: BackupPasswordSource.maxBytes)) {
            try BackupPasswordSource.readFile(longFile.path)
        }

        #expect(throws: BackupPasswordError.unsupportedKind(path: folder.url.path, kind: "a folder")) { try BackupPasswordSource.readFile(folder.url.path) }
        #expect(throws: BackupPasswordError.unsupportedKind(path: "/dev/null", kind: "a character device")) { try BackupPasswordSource.readFile("/dev/null") }
    }

    @Test("SecretBytes clears its bytes on clear() and when shortened")
    func secretBytes() {
        let secret = Array("hunter2".utf8).withUnsafeBytes { SecretBytes(copying: $0) }
        #expect(Self.bytes(secret) == Array("hunter2".utf8))
        secret.setCount(3)
        #expect(secret.withUnsafeMutableBytes { Array($0) } == Array("hun".utf8) + [0, 0, 0, 0])
        secret.clear()
        #expect(secret.count == 0)
        #expect(secret.withUnsafeMutableBytes { Array($0) }.allSatisfy { $0 == 0 })
    }

    @Test("RFC 3394 §4.6: a 256-bit key unwrapped with a 256-bit KEK; a changed byte does not unwrap")
    func keyUnwrap() throws {
        func hex(_ text: String) -> [UInt8] {
            var out: [UInt8] = []
            var chars = text.filter(\.isHexDigit).makeIterator()
            while let a = chars.next(), let b = chars.next() { out.append(UInt8(String([a, b]), radix: 16)!) }
            return out
        }
        let kek = hex("000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F")
        var wrapped = hex("28C9F404C4B810F4 CBCCB35CFB87F826 3F5786E2D80ED326 CBC7F0E71A99F43B FB988B9B7A02DD21")
        let key = kek.withUnsafeBytes { SecretBytes(copying: $0) }
        let unwrapped = try #require(try BackupCrypto.unwrap(Data(wrapped), with: key))
        #expect(Self.bytes(unwrapped) == hex("00112233445566778899AABBCCDDEEFF000102030405060708090A0B0C0D0E0F"))
        wrapped[10] ^= 1
        #expect(try BackupCrypto.unwrap(Data(wrapped), with: key) == nil)
    }

    static func tlv(_ tag: String, _ value: [UInt8]) -> [UInt8] {
        Array(tag.utf8) + withUnsafeBytes(of: UInt32(value.count).bigEndian, Array.init) + value
    }
    static func tlv(_ tag: String, _ value: UInt32) -> [UInt8] { tlv(tag, withUnsafeBytes(of: value.bigEndian, Array.init)) }

    @Test("keybag: fields and class keys read; a record cut short, a wild ITER or no class key is damage in words")
    func keybag() throws {
        let head = Self.tlv("VERS", 4) + Self.tlv("TYPE", 1) + Self.tlv("UUID", [UInt8](repeating: 1, count: 16))
            + Self.tlv("WRAP", 0) + Self.tlv("SALT", [UInt8](repeating: 2, count: 20)) + Self.tlv("ITER", 10_000)
            + Self.tlv("DPWT", 1) + Self.tlv("DPIC", 10_000_000) + Self.tlv("DPSL", [UInt8](repeating: 3, count: 20))
        let classEntry = Self.tlv("UUID", [UInt8](repeating: 4, count: 16)) + Self.tlv("CLAS", 3) + Self.tlv("WRAP", 2)
            + Self.tlv("KTYP", 0) + Self.tlv("WPKY", [UInt8](repeating: 5, count: 40))
        let bag = try BackupKeybag(Data(head + classEntry))
        #expect(bag.iterations == 10_000 && bag.doubleProtectionIterations == 10_000_000 && bag.hasDoubleProtection)
        #expect(bag.classes[3]?.wrappedKey == Data(repeating: 5, count: 40))
        #expect(bag.classes[3]?.wrap == 2)

        func damage(_ bytes: [UInt8]) -> String? {
            do { _ = try BackupKeybag(Data(bytes)); return nil } catch { return error.detail }
        }
        #expect(damage(Array((head + classEntry).dropLast(7)))?.contains("WPKY record says 40 bytes") == true)
        #expect(damage(Array((head + classEntry).dropLast(45)))?.contains("record header") == true)
        #expect(damage(head)?.contains("no class keys") == true)
        let wild = Self.tlv("UUID", [UInt8](repeating: 1, count: 16)) + Self.tlv("SALT", [1]) + Self.tlv("ITER", 4_000_000_000) + classEntry
        #expect(damage(wild)?.contains("ITER asks for 4000000000") == true)
    }

    /// `openssl enc -aes-256-cbc` with a zero IV: an independent encryptor, PKCS#7 padding included.
    static func opensslEncrypt(_ plain: URL, to out: URL, keyHex: String) throws -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl", "enc", "-aes-256-cbc", "-K", keyHex, "-iv", String(repeating: "0", count: 32), "-in", plain.path, "-out", out.path]
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    static var hasOpenSSL: Bool {
        ["/usr/bin/openssl", "/usr/local/bin/openssl", "/opt/homebrew/bin/openssl"].contains { FileManager.default.isExecutableFile(atPath: $0) }
    }

    @Test("streaming decryption across 1 MiB chunks gives openssl's plaintext back, hashed both ways; bad padding is refused",
          .enabled(if: hasOpenSSL, "the openssl command is not installed (make deps installs it)"))
    func streaming() throws {
        let folder = try TemporaryFolder("cbc")
        // 2.5 MiB + 7 bytes: several chunks, the padding in the last two held-back blocks.
        // Fixed bytes, so the wrong key's last block below is the same noise on every run.
        let plain = Data((0..<(5 << 19) + 7).map { (i: Int) in UInt8(truncatingIfNeeded: (i &* 2_654_435_761) >> 13) })
        let plainURL = folder.path("plain"), encrypted = folder.path("encrypted")
        try plain.write(to: plainURL)
        let keyBytes = (0..<32).map { UInt8($0 * 7 & 0xff) }
        let keyHex = keyBytes.map { String(format: "%02x", $0) }.joined()
        #expect(try Self.opensslEncrypt(plainURL, to: encrypted, keyHex: keyHex))
        let key = keyBytes.withUnsafeBytes { SecretBytes(copying: $0) }

        let out = folder.path("out")
        let outcome = try BackupFileDecryption.decrypt(encrypted, key: key, to: out, expectedSize: Int64(plain.count), name: "the test file")
        #expect(try Data(contentsOf: out) == plain)
        #expect(outcome.plaintextSHA256 == SHA256.hex(plain))
        #expect(outcome.ciphertext.sha256 == (try SHA256.hexOfFile(at: encrypted)))
        #expect(outcome.sizeNote == nil)

        // A record Size a few bytes short of the plaintext trims them (leftover padding).
        let trimmed = folder.path("trimmed")
        _ = try BackupFileDecryption.decrypt(encrypted, key: key, to: trimmed, expectedSize: Int64(plain.count - 3), name: "the test file")
        #expect(try Data(contentsOf: trimmed) == plain.prefix(plain.count - 3))
        // A Size far off keeps every byte and says so.
        let kept = try BackupFileDecryption.decrypt(encrypted, key: key, to: folder.path("kept"), expectedSize: 10, name: "the test file")
        #expect(kept.size == Int64(plain.count))
        #expect(kept.sizeNote?.contains("record says 10") == true)

        // The wrong key: the last block's padding is noise.
        let wrong = [UInt8](repeating: 9, count: 32).withUnsafeBytes { SecretBytes(copying: $0) }
        let bad = folder.path("bad")
        let error = try #require(throws: BackupError.self) {
            try BackupFileDecryption.decrypt(encrypted, key: wrong, to: bad, expectedSize: nil, name: "the test file")
        }
        #expect("\(error)".contains("the test file does not decrypt"))
        #expect(!FileManager.default.fileExists(atPath: bad.path), "no partial plaintext is left")
    }
}

extension BackupFileDecryption {
    /// Decrypts into the new file `destination`, made the way the backup reader makes its files.
    static func decrypt(_ source: URL, key: SecretBytes, to destination: URL, expectedSize: Int64?, name: String) throws -> DecryptionOutcome {
        let file = try PrivateTree(root: destination.deletingLastPathComponent()).createFile([destination.lastPathComponent])
        return try decrypt(source, key: key, into: file, expectedSize: expectedSize, name: name)
    }
}
