import CSHA
import Foundation

/// SHA-256 (FIPS 180-4), in Swift: Foundation on Linux has no CryptoKit and the package may
/// depend on nothing outside the toolchain. Used for evidence hashes, never for security.
public struct SHA256: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) =
        (0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19)
    private var buffer: [UInt8] = []
    private var length: UInt64 = 0

    private static let k: [UInt32] = [
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
    ]

    /// Whether this hasher may use the CPU's SHA instructions.
    private let useHardware: Bool

    /// - Parameter portable: use only the Swift implementation (tests cross-check the two).
    public init(portable: Bool = false) {
        useHardware = !portable && SHA256.hardware
    }

    public mutating func update(_ data: some DataProtocol) {
        for region in data.regions {
            region.withUnsafeBytes { update(raw: $0) }
        }
    }

    private mutating func update(raw: UnsafeRawBufferPointer) {
        length &+= UInt64(raw.count)
        var offset = 0
        if !buffer.isEmpty {
            let take = min(64 - buffer.count, raw.count)
            buffer.append(contentsOf: raw[0..<take])
            offset = take
            if buffer.count == 64 {
                buffer.withUnsafeBytes { compressBlocks($0, at: 0, count: 1) }
                buffer.removeAll(keepingCapacity: true)
            }
        }
        let blocks = (raw.count - offset) / 64
        if blocks > 0 {
            compressBlocks(raw, at: offset, count: blocks)
            offset += blocks * 64
        }
        if offset < raw.count { buffer.append(contentsOf: raw[offset...]) }
    }

    /// Whether the CPU's SHA instructions can be used (checked once).
    static let hardware = storelens_sha256_hardware_available() == 1

    /// Compresses `count` whole blocks, with the CPU's SHA instructions when it has them.
    private mutating func compressBlocks(_ raw: UnsafeRawBufferPointer, at offset: Int, count: Int) {
        guard useHardware, let base = raw.baseAddress else {
            for n in 0..<count { compress(raw, at: offset + n * 64) }
            return
        }
        var words: [UInt32] = [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7]
        words.withUnsafeMutableBufferPointer { w in
            storelens_sha256_blocks(w.baseAddress!, base.assumingMemoryBound(to: UInt8.self) + offset, count)
        }
        state = (words[0], words[1], words[2], words[3], words[4], words[5], words[6], words[7])
    }

    private mutating func compress(_ raw: UnsafeRawBufferPointer, at offset: Int) {
        SHA256.k.withUnsafeBufferPointer { k in
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                compress(raw, at: offset, k: k.baseAddress!, w: w.baseAddress!)
            }
        }
    }

    /// One 64-byte block. Unchecked pointer arithmetic: this loop is where hashing time goes.
    @inline(__always)
    private mutating func compress(_ raw: UnsafeRawBufferPointer, at offset: Int,
                                   k: UnsafePointer<UInt32>, w: UnsafeMutablePointer<UInt32>) {
        let base = raw.baseAddress! + offset
        for i in 0..<16 {
            w[i] = UInt32(bigEndian: base.loadUnaligned(fromByteOffset: i &* 4, as: UInt32.self))
        }
        for i in 16..<64 {
            let a = w[i &- 15], b = w[i &- 2]
            let s0 = a.rotr(7) ^ a.rotr(18) ^ (a >> 3)
            let s1 = b.rotr(17) ^ b.rotr(19) ^ (b >> 10)
            w[i] = w[i &- 16] &+ s0 &+ w[i &- 7] &+ s1
        }
        var (a, b, c, d, e, f, g, h) = state
        for i in 0..<64 {
            let s1 = e.rotr(6) ^ e.rotr(11) ^ e.rotr(25)
            let ch = (e & f) ^ (~e & g)
            let t1 = h &+ s1 &+ ch &+ k[i] &+ w[i]
            let s0 = a.rotr(2) ^ a.rotr(13) ^ a.rotr(22)
            let maj = (a & b) ^ (a & c) ^ (b & c)
            h = g; g = f; f = e; e = d &+ t1; d = c; c = b; b = a; a = t1 &+ s0 &+ maj
        }
        state = (state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d,
                 state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h)
    }

    /// The digest; the hasher should not be used afterwards.
    public mutating func finalize() -> [UInt8] {
        let bitLength = length &* 8
        var tail: [UInt8] = [0x80]
        while (buffer.count + tail.count) % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { tail.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        let savedLength = length
        update(tail)
        length = savedLength
        let s = state
        return [s.0, s.1, s.2, s.3, s.4, s.5, s.6, s.7].flatMap { word in
            (0..<4).map { UInt8(truncatingIfNeeded: word >> (24 - 8 * UInt32($0))) }
        }
    }

    /// The hex digest of `data`.
    public static func hex(_ data: some DataProtocol) -> String {
        var hasher = SHA256()
        hasher.update(data)
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
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
        let size = 1 << 20
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
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}

private extension UInt32 {
    @inline(__always) func rotr(_ n: UInt32) -> UInt32 { (self >> n) | (self << (32 - n)) }
}
