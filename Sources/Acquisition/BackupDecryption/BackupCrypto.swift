import CCrypto
import Foundation
import StoreFormats

/// A failure inside libcrypto itself: never a fact about the backup (a wrong key is reported by
/// `unwrap` returning nil, bad padding by `CBCDecryptor`'s caller).
public enum BackupCryptoError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A libcrypto call failed where it cannot fail on good arguments (out of memory, say).
    case libcrypto(operation: String, detail: String)
    /// A key of the wrong length was about to be used.
    case keyLength(operation: String, expected: Int, found: Int)

    public var description: String {
        switch self {
        case .libcrypto(let operation, let detail):
            return "internal error: libcrypto's \(operation) failed (\(detail)); please report this."
        case .keyLength(let operation, let expected, let found):
            return "internal error: \(operation) was given a \(found)-byte key where \(expected) bytes are needed; please report this."
        }
    }
}

/// The three pieces of cryptography an encrypted iOS backup needs, each one call into OpenSSL's
/// libcrypto: PBKDF2 (password to key), RFC 3394 AES key unwrap (class and file keys) and
/// AES-256-CBC (file contents). Nothing here is written by hand.
enum BackupCrypto {
    enum Digest { case sha256, sha1 }

    /// PBKDF2-HMAC with `digest`, 32 bytes out.
    static func pbkdf2(_ password: SecretBytes, salt: Data, iterations: Int, digest: Digest) throws(BackupCryptoError) -> SecretBytes {
        storelens_crypto_init()
        let key = SecretBytes(capacity: 32)
        let md = digest == .sha256 ? EVP_sha256() : EVP_sha1()
        let ok = password.withUnsafeBytes { pass in
            salt.withUnsafeBytes { salt in
                key.withUnsafeMutableBytes { out in
                    PKCS5_PBKDF2_HMAC(pass.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(pass.count),
                                      salt.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(salt.count),
                                      Int32(clamping: iterations), md, 32, out.baseAddress?.assumingMemoryBound(to: UInt8.self))
                }
            }
        }
        guard ok == 1 else { throw .libcrypto(operation: "PKCS5_PBKDF2_HMAC", detail: lastError()) }
        key.setCount(32)
        return key
    }

    /// RFC 3394 AES-256 key unwrap of `wrapped` (40 bytes for a 32-byte key) with `kek`; nil when
    /// the integrity check fails, which is what a wrong key looks like.
    static func unwrap(_ wrapped: Data, with kek: SecretBytes) throws(BackupCryptoError) -> SecretBytes? {
        guard kek.count == 32 else { throw .keyLength(operation: "AES key unwrap", expected: 32, found: kek.count) }
        guard wrapped.count >= 24, wrapped.count % 8 == 0 else { return nil }
        guard let ctx = EVP_CIPHER_CTX_new() else { throw .libcrypto(operation: "EVP_CIPHER_CTX_new", detail: lastError()) }
        defer { EVP_CIPHER_CTX_free(ctx) }
        storelens_allow_wrap(ctx)
        let started = kek.withUnsafeBytes { key in
            EVP_DecryptInit_ex(ctx, EVP_aes_256_wrap(), nil, key.baseAddress?.assumingMemoryBound(to: UInt8.self), nil)
        }
        guard started == 1 else { throw .libcrypto(operation: "EVP_DecryptInit_ex(aes-256-wrap)", detail: lastError()) }
        let out = SecretBytes(capacity: wrapped.count + 16)
        var length: Int32 = 0
        let updated = wrapped.withUnsafeBytes { input in
            out.withUnsafeMutableBytes { output in
                EVP_DecryptUpdate(ctx, output.baseAddress?.assumingMemoryBound(to: UInt8.self), &length,
                                  input.baseAddress?.assumingMemoryBound(to: UInt8.self), Int32(input.count))
            }
        }
        guard updated == 1, length == Int32(wrapped.count - 8) else {
            ERR_clear_error()
            return nil
        }
        var tail: Int32 = 0
        let finished = out.withUnsafeMutableBytes { output in
            EVP_DecryptFinal_ex(ctx, output.baseAddress!.assumingMemoryBound(to: UInt8.self) + Int(length), &tail)
        }
        guard finished == 1 else {
            ERR_clear_error()
            return nil
        }
        out.setCount(Int(length + tail))
        return out
    }

    /// The most recent libcrypto error, as text (never holds key material).
    static func lastError() -> String {
        let code = ERR_get_error()
        guard code != 0 else { return "no error queued" }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        ERR_clear_error()
        // NUL-terminated within the buffer (ERR_error_string_n always terminates it).
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// AES-256-CBC decryption with a zero IV, as iOS encrypts backup files, fed in chunks so a file
/// of any size passes through a bounded buffer. Padding is left on: the caller removes it from
/// the last block, where it can say what was wrong.
final class CBCDecryptor {
    private let ctx: OpaquePointer

    init(key: SecretBytes) throws(BackupCryptoError) {
        guard key.count == 32 else { throw .keyLength(operation: "AES-256-CBC", expected: 32, found: key.count) }
        storelens_crypto_init()
        guard let ctx = EVP_CIPHER_CTX_new() else { throw .libcrypto(operation: "EVP_CIPHER_CTX_new", detail: BackupCrypto.lastError()) }
        self.ctx = ctx
        let iv = [UInt8](repeating: 0, count: 16)
        let started = key.withUnsafeBytes { k in
            EVP_DecryptInit_ex(ctx, EVP_aes_256_cbc(), nil, k.baseAddress?.assumingMemoryBound(to: UInt8.self), iv)
        }
        guard started == 1 else {
            EVP_CIPHER_CTX_free(ctx)
            throw .libcrypto(operation: "EVP_DecryptInit_ex(aes-256-cbc)", detail: BackupCrypto.lastError())
        }
        EVP_CIPHER_CTX_set_padding(ctx, 0)
    }

    /// Decrypts `count` bytes (a multiple of 16) from `input` into `output` (as large), returning
    /// how many bytes were written (all of them: padding is off).
    func update(_ input: UnsafeRawPointer, count: Int, into output: UnsafeMutableRawPointer) throws(BackupCryptoError) -> Int {
        var length: Int32 = 0
        let ok = EVP_DecryptUpdate(ctx, output.assumingMemoryBound(to: UInt8.self), &length,
                                   input.assumingMemoryBound(to: UInt8.self), Int32(count))
        guard ok == 1 else { throw .libcrypto(operation: "EVP_DecryptUpdate(aes-256-cbc)", detail: BackupCrypto.lastError()) }
        return Int(length)
    }

    // EVP_CIPHER_CTX_free clears the key schedule before freeing it.
    deinit { EVP_CIPHER_CTX_free(ctx) }
}

extension BackupCryptoError: DescribedError {
    public var errorClass: ErrorClass { .ours }
}
