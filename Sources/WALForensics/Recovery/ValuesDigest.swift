import Foundation
import StoreFormats

/// The SHA-256 of a record's values, standing for them where records are only compared: two
/// carved copies are one record, a carved record is a committed version's copy, when their
/// digests are equal. Kept instead of the values so that memory does not grow with the size of
/// the records carved; SHA-256 makes two different values with one digest a practical
/// impossibility (the values themselves stay in the scratch database, and are what is printed).
struct ValuesDigest: Hashable, Sendable {
    private let words: (UInt64, UInt64, UInt64, UInt64)

    /// No digest yet (a record whose values could not be read back).
    static let none = ValuesDigest(words: (0, 0, 0, 0))

    private init(words: (UInt64, UInt64, UInt64, UInt64)) { self.words = words }

    private init(_ hasher: inout SHA256) {
        let d = hasher.finalize()
        func word(_ at: Int) -> UInt64 { d[at ..< at + 8].reduce(0) { $0 << 8 | UInt64($1) } }
        words = (word(0), word(8), word(16), word(24))
    }

    /// Of a fingerprint (`RecordRecovery.fingerprint`: decoded values, names and kinds).
    init(_ fingerprint: String) {
        var hasher = SHA256()
        var text = fingerprint
        text.withUTF8 { hasher.update(UnsafeRawBufferPointer($0)) }
        self.init(&hasher)
    }

    /// Of stored values, each with its kind and length, so no value can run into the next (laid
    /// into one buffer and hashed at once: a hash call per value cost more than the hashing).
    init(_ values: [RecordValue]) {
        var buffer: [UInt8] = []
        buffer.reserveCapacity(9 + values.count * 9 + values.reduce(0) { n, v in
            switch v { case .text(let b), .blob(let b): return n + b.count; default: return n }
        })
        func put(_ kind: UInt8, _ number: UInt64) {
            buffer.append(kind)
            withUnsafeBytes(of: number.bigEndian) { buffer.append(contentsOf: $0) }
        }
        put(0xFF, UInt64(values.count))
        for value in values {
            switch value {
            case .null: put(0, 0)
            case .integer(let i): put(1, UInt64(bitPattern: i))
            case .real(let d): put(2, d.bitPattern)
            case .text(let bytes): put(3, UInt64(bytes.count)); buffer.append(contentsOf: bytes)
            case .blob(let bytes): put(4, UInt64(bytes.count)); buffer.append(contentsOf: bytes)
            }
        }
        var hasher = SHA256()
        buffer.withUnsafeBytes { hasher.update($0) }
        self.init(&hasher)
    }

    static func == (a: ValuesDigest, b: ValuesDigest) -> Bool { a.words == b.words }

    func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
    }
}
