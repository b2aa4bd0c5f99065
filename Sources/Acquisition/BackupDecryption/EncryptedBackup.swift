import Foundation
import StoreFormats

/// What an encrypted backup's Manifest.plist says about its encryption.
struct BackupManifestPlist {
    var isEncrypted = false
    var keybag: Data?
    /// 4-byte little-endian protection class, then Manifest.db's wrapped key (iOS 10.2 and later).
    var manifestKey: Data?
    /// `Lockdown.ProductVersion`: the iOS version that made the backup.
    var iosVersion: String?

    /// Reads Manifest.plist, binary (as Finder and iTunes write it) or XML.
    init(_ data: Data) {
        if BinaryPlist.isBinaryPlist(data), let value = try? BinaryPlist.decode(data) {
            isEncrypted = value["IsEncrypted"]?.boolValue == true
            keybag = value["BackupKeyBag"]?.dataValue
            manifestKey = value["ManifestKey"]?.dataValue
            iosVersion = value["Lockdown"]?["ProductVersion"]?.stringValue
            return
        }
        guard let any = try? PropertyListSerialization.propertyList(from: data, options: [], format: nil),
              let dict = any as? [String: Any] else { return }
        isEncrypted = (dict["IsEncrypted"] as? Bool) == true
        keybag = dict["BackupKeyBag"] as? Data
        manifestKey = dict["ManifestKey"] as? Data
        iosVersion = (dict["Lockdown"] as? [String: Any])?["ProductVersion"] as? String
    }
}

/// One file's record in an encrypted backup's Manifest.db (`Files.file`, an NSKeyedArchiver
/// plist of an `MBFile`): the key its bytes are encrypted with and the size it should have.
struct BackupFileRecord {
    let protectionClass: UInt32
    /// 40 bytes: the file key, RFC 3394-wrapped with the class key.
    let wrappedKey: Data
    let size: Int64?

    struct Unreadable: Error { let detail: String }

    /// nil when the record has no EncryptionKey (a folder, a link, an empty file).
    static func parse(_ blob: Data) throws(Unreadable) -> BackupFileRecord? {
        do {
            let archive = try KeyedArchive(data: blob)
            guard let root = try archive.object(try archive.root) else { throw Unreadable(detail: "its root object is $null") }
            guard let keyReference = try archive.reference("EncryptionKey", in: root) else { return nil }
            guard let key = try archive.data(keyReference), key.count > 4 else {
                throw Unreadable(detail: "its EncryptionKey is shorter than 4 bytes")
            }
            let prefix = key.prefix(4).enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
            let declared = root.int("ProtectionClass").flatMap { UInt32(exactly: $0) }
            return BackupFileRecord(protectionClass: declared ?? prefix, wrappedKey: Data(key.dropFirst(4)), size: root.int("Size"))
        } catch let error as Unreadable {
            throw error
        } catch {
            throw Unreadable(detail: "\(error)")
        }
    }
}

/// An encrypted backup unlocked with its password: the class keys, and the decryption of
/// Manifest.db and of each file into storelens's private working folder.
///
/// The password is turned into the keybag's key and dropped from here at once; the class keys
/// are cleared by `close()` (or on release), once the files needed are decrypted.
final class EncryptedBackup {
    let root: URL
    private var classKeys: [UInt32: SecretBytes]

    /// Reads the keybag and unlocks it. Everything that can be checked without the password is
    /// checked before asking for it; a wrong password fails here, before any file is decrypted.
    init(root: URL, plist: BackupManifestPlist, password source: BackupPasswordSource?) throws {
        self.root = root
        let plistPath = root.appendingPathComponent("Manifest.plist").path
        guard let manifestKey = plist.manifestKey else {
            throw BackupError.unsupportedEncryption(path: root.path, iosVersion: plist.iosVersion)
        }
        guard let keybagData = plist.keybag else {
            throw BackupError.keybagDamaged(file: plistPath, detail: "it has no BackupKeyBag")
        }
        let keybag: BackupKeybag
        do {
            keybag = try BackupKeybag(keybagData)
        } catch {
            throw BackupError.keybagDamaged(file: plistPath, detail: error.detail)
        }
        guard keybag.hasDoubleProtection else {
            throw BackupError.unsupportedEncryption(path: root.path, iosVersion: plist.iosVersion)
        }
        guard manifestKey.count == 44 else {
            throw BackupError.keybagDamaged(file: plistPath, detail: "its ManifestKey is \(manifestKey.count) bytes, not 44")
        }
        guard let source else { throw BackupPasswordError.required(backup: root.path) }
        let password = try source.password(for: root.path)
        defer { password.clear() }
        guard let keys = try keybag.unlock(with: password) else {
            throw BackupError.wrongPassword(path: root.path)
        }
        classKeys = keys
    }

    /// Clears the class keys; nothing more can be decrypted afterwards.
    func close() {
        for key in classKeys.values { key.clear() }
        classKeys = [:]
    }

    deinit { close() }

    /// The file key for `record`, unwrapped with its class key. `name` names the file in errors.
    func fileKey(protectionClass: UInt32, wrappedKey: Data, name: String) throws -> SecretBytes {
        guard let classKey = classKeys[protectionClass] else {
            throw BackupError.missingClassKey(file: name, protectionClass: protectionClass)
        }
        guard wrappedKey.count == 40, let key = try BackupCrypto.unwrap(wrappedKey, with: classKey) else {
            throw BackupError.decryptionFailed(file: name, detail: "its wrapped key does not unwrap with the class \(protectionClass) key")
        }
        return key
    }

    /// Manifest.db's key, from Manifest.plist's ManifestKey.
    func manifestKey(_ plist: BackupManifestPlist) throws -> SecretBytes {
        let data = plist.manifestKey ?? Data()
        let protectionClass = data.prefix(4).enumerated().reduce(UInt32(0)) { $0 | UInt32($1.element) << (8 * UInt32($1.offset)) }
        return try fileKey(protectionClass: protectionClass, wrappedKey: Data(data.dropFirst(4)),
                           name: root.appendingPathComponent("Manifest.db").path)
    }
}

/// What decrypting one file produced.
struct DecryptionOutcome {
    let plaintextSHA256: String
    let ciphertext: FileEvidence
    /// Bytes written.
    let size: Int64
    /// Set when the decrypted length disagrees with the record's Size by a block or more (kept
    /// whole: Manifest.db's sizes routinely lag behind live databases).
    let sizeNote: String?
}

enum BackupFileDecryption {
    /// Chunk size: bounded memory, whatever the file's size.
    static let chunk = 1 << 20

    /// The first 16 plaintext bytes (CBC with a zero IV needs no earlier block), or nil for a
    /// file shorter than one block. Enough to recognise "SQLite format 3\0".
    static func firstBlock(of source: URL, key: SecretBytes) throws -> [UInt8]? {
        let fd = open(source.path, O_RDONLY | O_NOFOLLOW)
        guard fd >= 0 else { throw AcquisitionError.unreadable(path: source.path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var block = [UInt8](repeating: 0, count: 16)
        guard read(fd, &block, 16) == 16 else { return nil }
        var plain = [UInt8](repeating: 0, count: 32)
        let decryptor = try CBCDecryptor(key: key)
        let n = try block.withUnsafeBytes { input in
            try plain.withUnsafeMutableBytes { output in try decryptor.update(input.baseAddress!, count: 16, into: output.baseAddress!) }
        }
        return n == 16 ? Array(plain.prefix(16)) : nil
    }

    /// The plaintext of `count` bytes at `offset` (both multiples of 16), read and decrypted alone:
    /// CBC needs only the ciphertext block before them (zeros before the first, the IV).
    static func peek(_ source: URL, key: SecretBytes, offset: Int64, count: Int) throws -> [UInt8] {
        let fd = open(source.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard fd >= 0 else { throw AcquisitionError.unreadable(path: source.path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        let from = max(0, offset - 16)
        var cipher = [UInt8](repeating: 0, count: Int(offset - from) + count)
        let got = cipher.withUnsafeMutableBytes { pread(fd, $0.baseAddress!, $0.count, off_t(from)) }
        guard got == cipher.count else { throw AcquisitionError.unreadable(path: source.path, reason: "it is shorter than its size says") }
        if offset == 0 { cipher.insert(contentsOf: [UInt8](repeating: 0, count: 16), at: 0) }
        var plain = [UInt8](repeating: 0, count: cipher.count)
        let decryptor = try CBCDecryptor(key: key)
        _ = try cipher.withUnsafeBytes { input in
            try plain.withUnsafeMutableBytes { output in try decryptor.update(input.baseAddress!, count: input.count, into: output.baseAddress!) }
        }
        defer { for i in plain.indices { plain[i] = 0 } }
        return Array(plain.suffix(count))
    }

    /// Checks an encrypted Manifest.db before it is decrypted, from three of its blocks: the first
    /// must be SQLite's, the last must end in valid padding, and the size the SQLite header declares
    /// (when it is valid) must be the size the file decrypts to. A sparse or padded Manifest.db of
    /// gigabytes is refused here, before any of it is decrypted into the working folder.
    static func checkManifest(_ source: URL, key: SecretBytes, name: String) throws {
        var st = stat()
        guard lstat(source.path, &st) == 0 else { throw AcquisitionError.unreadable(path: source.path, reason: String(cString: strerror(errno))) }
        let total = Int64(st.st_size)
        guard total >= 112, total % 16 == 0 else {
            throw BackupError.decryptionFailed(file: name, detail: "it is \(total) bytes, not a whole number of 16-byte AES blocks holding a database")
        }
        let head = try peek(source, key: key, offset: 0, count: 112)
        guard DatabaseHeader.isSQLite(Data(head)) else { throw BackupError.manifestNotDecrypted(file: name) }
        let last = try peek(source, key: key, offset: total - 16, count: 16)
        let pad = Int(last[15])
        guard pad >= 1, pad <= 16, last.suffix(pad).allSatisfy({ Int($0) == pad }) else {
            throw BackupError.decryptionFailed(file: name, detail: "its last block does not end in valid padding: the key does not fit the file, or the file is damaged")
        }
        guard let header = try? DatabaseHeader(data: Data(head.prefix(100))), header.pageCountIsValid else { return }
        let declared = Int64(header.pageCount).multipliedReportingOverflow(by: Int64(header.pageSize))
        let plaintext = total - Int64(pad)
        if declared.overflow || declared.partialValue != plaintext {
            throw BackupError.decryptionFailed(file: name, detail: "its SQLite header declares \(header.pageCount) pages of \(header.pageSize) bytes, but it would decrypt to \(plaintext) bytes")
        }
    }

    /// Decrypts `source` into `destination`, a new file open for writing (made by `PrivateTree`,
    /// closed here), through bounded buffers, hashing the ciphertext and the plaintext on the way,
    /// and removing PKCS#7 padding from the end. `expectedSize` (the record's Size) trims what is
    /// left of padding past it, when less than a block. `name` names the file in errors. The
    /// destination is removed on any error.
    ///
    /// Two stages, so a large file keeps both cores busy: this thread reads, hashes the ciphertext
    /// and decrypts a chunk while a second one hashes and writes the chunk before it.
    static func decrypt(_ source: URL, key: SecretBytes, into file: (fd: Int32, url: URL), expectedSize: Int64?,
                        name: String) throws -> DecryptionOutcome {
        let destination = file.url
        let output = file.fd
        var finished = false
        defer {
            close(output)
            if !finished { unlink(destination.path) }
        }
        let (input, identity, total) = try openCiphertext(source)
        defer { close(input) }
        guard total % 16 == 0 else {
            throw BackupError.decryptionFailed(file: name, detail: "it is \(total) bytes, not a whole number of 16-byte AES blocks")
        }
        let sink = PlaintextSink(fd: output, folder: destination.deletingLastPathComponent().path, chunk: chunk)
        defer { sink.drain() }
        var cipherHash = SHA256()
        let decryptor = try CBCDecryptor(key: key)
        let inBuffer = UnsafeMutableRawPointer.allocate(byteCount: chunk, alignment: 64)
        defer { inBuffer.deallocate() }
        // The last two blocks are held back until the end, where the padding says how many of
        // their bytes are the file's.
        let heldFrom = max(0, total - 32)
        var tail: [UInt8] = []
        var done: Int64 = 0
        let progress = ProgressReporter.current
        while done < total {
            let got = try readFully(input, into: inBuffer, count: Int(min(Int64(chunk), total - done)), path: source.path)
            cipherHash.update(UnsafeRawBufferPointer(start: inBuffer, count: got))
            let slot = try sink.freeSlot()
            let n = try decryptor.update(inBuffer, count: got, into: slot.pointer)
            guard n == got else { throw BackupCryptoError.libcrypto(operation: "EVP_DecryptUpdate(aes-256-cbc)", detail: "\(n) bytes out for \(got) in") }
            let direct = Int(max(0, min(Int64(n), heldFrom - done)))
            if direct < n { tail += UnsafeRawBufferPointer(start: slot.pointer + direct, count: n - direct) }
            sink.submit(slot, count: direct)
            done += Int64(got)
            progress.report("decrypting \(destination.lastPathComponent)", done: done, total: total, unit: .bytes)
        }
        sink.drain()
        try sink.failure()
        let note = try writeUnpadded(&tail, total: total, heldFrom: heldFrom, expectedSize: expectedSize, name: name, sink: sink)
        finished = true
        func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
        return DecryptionOutcome(plaintextSHA256: hex(sink.finalize()),
                                 ciphertext: FileEvidence(path: source.path, size: Int(total), sha256: hex(cipherHash.finalize()), identity: identity),
                                 size: sink.written, sizeNote: note)
    }

    /// Opens an evidence file for reading (never through a link): its descriptor, for the
    /// caller to close, its identity, and its size.
    static func openCiphertext(_ source: URL) throws -> (fd: Int32, identity: FileIdentity, size: Int64) {
        guard let identity = FileIdentity.of(source.path) else {
            throw AcquisitionError.unreadable(path: source.path, reason: String(cString: strerror(errno)))
        }
        if let target = SymbolicLink.target(of: source.path) { throw AcquisitionError.linkInEvidence(path: source.path, target: target) }
        let input = open(source.path, O_RDONLY | O_NOFOLLOW)
        EvidenceReads.pass(source.path)
        guard input >= 0 else { throw AcquisitionError.unreadable(path: source.path, reason: String(cString: strerror(errno))) }
        var st = stat()
        guard fstat(input, &st) == 0 else {
            let reason = String(cString: strerror(errno))
            close(input)
            throw AcquisitionError.unreadable(path: source.path, reason: reason)
        }
        return (input, identity, Int64(st.st_size))
    }

    /// Reads exactly `count` bytes into `buffer` (retrying short reads and EINTR); a file that
    /// ends sooner became shorter while being read.
    static func readFully(_ input: Int32, into buffer: UnsafeMutableRawPointer, count want: Int, path: String) throws -> Int {
        var got = 0
        while got < want {
            let n = read(input, buffer + got, want - got)
            if n < 0 {
                if errno == EINTR { continue }
                throw AcquisitionError.unreadable(path: path, reason: String(cString: strerror(errno)))
            }
            if n == 0 { break }
            got += n
        }
        guard got == want else {
            throw AcquisitionError.unreadable(path: path, reason: "it became shorter while being read")
        }
        return got
    }

    /// Checks the PKCS#7 padding of the held-back last blocks and writes what of them is the
    /// file's (trimmed to `expectedSize` when that is less than a block shorter), then zeroes
    /// them. Returns a note when the size disagrees with the Manifest.db record.
    private static func writeUnpadded(_ tail: inout [UInt8], total: Int64, heldFrom: Int64, expectedSize: Int64?, name: String,
                                      sink: PlaintextSink) throws -> String? {
        guard total > 0 else {
            if let expectedSize, expectedSize != 0 { return "\(name) is empty in the backup but its Manifest.db record says \(expectedSize) bytes" }
            return nil
        }
        var note: String?
        let pad = Int(tail.last ?? 0)
        guard pad >= 1, pad <= 16, pad <= tail.count, tail.suffix(pad).allSatisfy({ Int($0) == pad }) else {
            throw BackupError.decryptionFailed(file: name, detail: "its last block does not end in valid padding: the key does not fit the file, or the file is damaged")
        }
        let stripped = total - Int64(pad)
        var keep = stripped
        if let expectedSize, expectedSize < stripped, stripped - expectedSize < 16 {
            keep = expectedSize
        } else if let expectedSize, expectedSize != stripped {
            note = "\(name) decrypts to \(stripped) bytes but its Manifest.db record says \(expectedSize); all \(stripped) decrypted bytes are kept"
        }
        let fromTail = Int(keep - heldFrom)
        if fromTail > 0 {
            let slot = try sink.freeSlot()
            tail.withUnsafeBytes { slot.pointer.copyMemory(from: $0.baseAddress!, byteCount: fromTail) }
            sink.submit(slot, count: fromTail)
            sink.drain()
            try sink.failure()
        }
        for i in tail.indices { tail[i] = 0 }
        return note
    }
}

/// The second stage of `BackupFileDecryption.decrypt`: hashes and writes decrypted chunks, in
/// order, on a serial queue of its own, from two buffers the first stage fills in turn.
private final class PlaintextSink: @unchecked Sendable {
    struct Slot { let index: Int; let pointer: UnsafeMutableRawPointer }
    private let fd: Int32
    private let folder: String
    private let chunk: Int
    private let buffers: [UnsafeMutableRawPointer]
    private let free: DispatchSemaphore
    private var nextSlot = 0
    private let queue = DispatchQueue(label: "storelens.decrypt.write")
    // Touched only on `queue`, read after `drain()`.
    private var hasher = SHA256()
    private(set) var written: Int64 = 0
    private var error: Error?

    init(fd: Int32, folder: String, chunk: Int) {
        self.fd = fd
        self.folder = folder
        self.chunk = chunk
        buffers = (0..<2).map { _ in UnsafeMutableRawPointer.allocate(byteCount: chunk + 32, alignment: 64) }
        free = DispatchSemaphore(value: buffers.count)
    }

    /// The next buffer to decrypt into, once the writer is done with it.
    func freeSlot() throws -> Slot {
        free.wait()
        let slot = Slot(index: nextSlot, pointer: buffers[nextSlot])
        nextSlot = (nextSlot + 1) % buffers.count
        return slot
    }

    func submit(_ slot: Slot, count: Int) {
        let index = slot.index
        queue.async { [self] in
            let pointer = buffers[index]
            defer { self.free.signal() }
            guard error == nil, count > 0 else { return }
            var offset = 0
            while offset < count {
                let n = write(fd, pointer + offset, count - offset)
                if n < 0 {
                    if errno == EINTR { continue }
                    error = WorkingFolderFailure(folder: folder, code: errno)
                    return
                }
                offset += n
            }
            hasher.update(UnsafeRawBufferPointer(start: pointer, count: count))
            written += Int64(count)
        }
    }

    /// Waits until every chunk submitted is written.
    func drain() { queue.sync {} }

    func failure() throws { if let error { throw error } }

    func finalize() -> [UInt8] { hasher.finalize() }

    deinit {
        drain()
        // Plaintext of the evidence stays in scratch only: the buffers are cleared too.
        for buffer in buffers {
            memset(buffer, 0, chunk + 32)
            buffer.deallocate()
        }
    }
}
