import CCrypto
import Foundation

/// Bytes that must not outlive their use: a backup password, the keys derived from it, the
/// class keys and file keys unwrapped with them.
///
/// They live in memory allocated here, never in a Swift `Array`, `Data` or `String` (which the
/// runtime may copy, grow and free without clearing), and are overwritten with `OPENSSL_cleanse`
/// (a clear the compiler may not remove) when released. What Swift cannot promise is listed in
/// docs/backups.md: the pages may be swapped out, and bytes the kernel or libcrypto copied on
/// their own are out of reach.
public final class SecretBytes: @unchecked Sendable {
    private let pointer: UnsafeMutableRawPointer
    /// How many bytes are in use (a password read into a larger buffer is shorter than it).
    public private(set) var count: Int
    private let capacity: Int

    /// `capacity` zero bytes, `count` 0 until `setCount`.
    public init(capacity: Int) {
        self.capacity = max(capacity, 1)
        pointer = UnsafeMutableRawPointer.allocate(byteCount: self.capacity, alignment: 16)
        pointer.initializeMemory(as: UInt8.self, repeating: 0, count: self.capacity)
        count = 0
    }

    /// A copy of `bytes` (the caller clears its own buffer).
    public convenience init(copying bytes: UnsafeRawBufferPointer) {
        self.init(capacity: bytes.count)
        if let base = bytes.baseAddress, bytes.count > 0 { pointer.copyMemory(from: base, byteCount: bytes.count) }
        count = bytes.count
    }

    /// Shortens the bytes in use (the rest is cleared at once).
    public func setCount(_ newCount: Int) {
        precondition(newCount >= 0 && newCount <= capacity)
        if newCount < capacity { OPENSSL_cleanse(pointer + newCount, capacity - newCount) }
        count = newCount
    }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: count))
    }

    /// The whole buffer, for functions that fill it.
    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: pointer, count: capacity))
    }

    /// Overwrites every byte with zeros now; the value is empty afterwards.
    public func clear() {
        OPENSSL_cleanse(pointer, capacity)
        count = 0
    }

    deinit {
        OPENSSL_cleanse(pointer, capacity)
        pointer.deallocate()
    }
}
