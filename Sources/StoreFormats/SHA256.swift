import CCrypto
import Foundation

/// SHA-256 through OpenSSL's libcrypto (the same library that decrypts backups): one well-kept
/// implementation, with the CPU's SHA instructions where it has them, in every build (a C target of
/// our own is compiled without optimisation in debug builds, libcrypto never is). Used for evidence
/// hashes, never for security.
///
/// A value type like the rest of the API: a copy hashes on from where the original was, without
/// changing it (the context is copied on the first write after a copy).
public struct SHA256: @unchecked Sendable {
    private final class Context {
        let pointer: OpaquePointer

        init() {
            _ = SHA256.libcryptoReady
            // Allocation is the only way these calls fail; there is no sensible way on without it.
            guard let pointer = EVP_MD_CTX_new(), EVP_DigestInit_ex(pointer, EVP_sha256(), nil) == 1 else {
                fatalError("libcrypto could not start a SHA-256 context (out of memory)")
            }
            self.pointer = pointer
        }

        init(copying other: Context) {
            guard let pointer = EVP_MD_CTX_new(), EVP_MD_CTX_copy_ex(pointer, other.pointer) == 1 else {
                fatalError("libcrypto could not copy a SHA-256 context (out of memory)")
            }
            self.pointer = pointer
        }

        deinit { EVP_MD_CTX_free(pointer) }
    }

    private var context = Context()

    /// libcrypto set up once, without its atexit teardown (see CCrypto's shim).
    static let libcryptoReady: Void = storelens_crypto_init()

    public init() {}

    public mutating func update(_ data: some DataProtocol) {
        if !isKnownUniquelyReferenced(&context) { context = Context(copying: context) }
        for region in data.regions {
            region.withUnsafeBytes { raw in
                guard let base = raw.baseAddress, raw.count > 0 else { return }
                _ = EVP_DigestUpdate(context.pointer, base, raw.count)
            }
        }
    }

    /// The digest; the hasher should not be used afterwards.
    public mutating func finalize() -> [UInt8] {
        if !isKnownUniquelyReferenced(&context) { context = Context(copying: context) }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = digest.withUnsafeMutableBufferPointer { EVP_DigestFinal_ex(context.pointer, $0.baseAddress, &length) }
        return digest
    }

    /// The digest as lowercase hex; the hasher should not be used afterwards.
    public mutating func finalizeHex() -> String {
        finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// The hex digest of `data`.
    public static func hex(_ data: some DataProtocol) -> String {
        var hasher = SHA256()
        hasher.update(data)
        return hasher.finalizeHex()
    }

    /// The hex digest of the file at `url`, read in 1 MiB chunks into one reused buffer, so memory
    /// stays flat and no chunk is allocated (this runs over every input twice per command).
    public static func hexOfFile(at url: URL) throws -> String {
        let handle = try FileHandle(forReadingFrom: url)
        defer { try? handle.close() }
        var hasher = SHA256()
        let progress = ProgressReporter.current
        let total = progress.isSilent ? nil : (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)?.int64Value
        var done: Int64 = 0
        // 256 KiB a read: as fast as larger reads here, and up to four files are hashed at once
        // beside a command's own work (before and after, two threads each).
        let size = 1 << 18
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 64)
        defer { buffer.deallocate() }
        while true {
            let n = read(handle.fileDescriptor, buffer, size)
            if n < 0 {
                if errno == EINTR { continue }
                throw CocoaError(.fileReadUnknown, userInfo: [NSFilePathErrorKey: url.path,
                                                             NSLocalizedDescriptionKey: "cannot read \(url.path): \(String(cString: strerror(errno)))"])
            }
            if n == 0 { break }
            hasher.update(UnsafeRawBufferPointer(start: buffer, count: n))
            done += Int64(n)
            progress.report("hashing \(url.lastPathComponent)", done: done, total: total, unit: .bytes)
        }
        return hasher.finalizeHex()
    }
}
