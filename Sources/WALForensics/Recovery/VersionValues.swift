import Acquisition
import CoreDataStore
import Foundation
import SQLiteAccess
import StoreFormats

/// The values of the versions the WAL's commits showed, kept in a scratch SQLite file until they
/// are handed out: what `recover` holds in memory per version is its digest and this file's key,
/// so a WAL that deleted or rewrote many records does not fill memory with their values (the
/// bench corpus's 10 000 deleted notes held about 10 MB).
///
/// The file is made in the working copy's private folder (SQLite's own private temporary file
/// for evidence held in memory) and removed when this is released; a failure there is ours,
/// never the evidence's (`WorkingFolderFailure`: SQLite's full, I/O and cannot-open errors).
final class VersionValues {
    /// The folder that holds the file, asked for on first use (a store read in place has no
    /// private folder until then: `WorkingCopy.privateFolder`); nil for evidence held in memory.
    private let folder: (() throws -> URL)?
    /// Opened on the first values kept (a store without WAL commits writes nothing).
    private var database: (connection: Connection, insert: Statement, select: Statement)?
    private var path: String?
    private var count: Int64 = 0
    /// Rows are written in one transaction, ended before the first is read back.
    private var writing = false

    init(folder: (() throws -> URL)?) {
        self.folder = folder
    }

    deinit {
        if let path { unlink(path) }
    }

    private func open() throws -> (connection: Connection, insert: Statement, select: Statement) {
        if let database { return database }
        let connection: Connection
        if let folder = try folder?() {
            let path = folder.appendingPathComponent("version-values-\(UUID().uuidString).sqlite").path
            self.path = path
            connection = try Connection.open(path: path, mode: .create, label: "recovered versions")
        } else {
            connection = try Connection.open(path: "", mode: .create, label: "recovered versions")
        }
        // Exclusive: nothing else opens this file, and a read then takes no lock and checks for no
        // hot journal (those were most of the cost of reading a version back, one at a time).
        try connection.execute("PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA cache_size = -1024; PRAGMA temp_store = FILE")
        try connection.execute("CREATE TABLE v (id INTEGER PRIMARY KEY, b BLOB NOT NULL)")
        let opened = (connection, try connection.prepare("INSERT INTO v (id, b) VALUES (?, ?)"), try connection.prepare("SELECT b FROM v WHERE id = ?"))
        database = opened
        return opened
    }

    /// Keeps `values`; the key `values(_:)` gives them back by.
    func store(_ values: [RecordChange.Value]) throws -> Int64 {
        let database = try open()
        if !writing {
            try database.connection.execute("BEGIN")
            writing = true
        }
        count += 1
        var out = Encoder()
        out.values(values)
        try database.insert.bind([.integer(count), .blob(Data(out.bytes))])
        while try database.insert.step() != nil {}
        return count
    }

    /// The values stored under `id`.
    func values(_ id: Int64) throws -> [RecordChange.Value] {
        guard let database else { throw WorkingFolderFailure(code: EIO) }
        if writing {
            try database.connection.execute("COMMIT")
            writing = false
        }
        try database.select.bind([.integer(id)])
        // Our own bytes, written above: anything else is the scratch file failing, not the evidence.
        guard let row = try database.select.step(), case .blob(let data) = row[0] else { throw WorkingFolderFailure(code: EIO) }
        var reader = Decoder(bytes: [UInt8](data))
        guard let values = reader.values(), reader.at == reader.bytes.count else { throw WorkingFolderFailure(code: EIO) }
        return values
    }

    /// Every case of `FieldValue` (and of the archived trees in it) as tagged bytes, so that the
    /// values read back are the values stored, exactly.
    struct Encoder {
        var bytes: [UInt8] = []

        mutating func int(_ v: Int64) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
        mutating func bits(_ v: UInt64) { withUnsafeBytes(of: v.bigEndian) { bytes.append(contentsOf: $0) } }
        mutating func flag(_ b: Bool) { bytes.append(b ? 1 : 0) }
        mutating func text(_ s: String) {
            var s = s
            s.withUTF8 { utf8 in
                int(Int64(utf8.count))
                bytes.append(contentsOf: utf8)
            }
        }
        mutating func optional(_ v: Int?) {
            flag(v != nil)
            if let v { int(Int64(v)) }
        }

        mutating func values(_ values: [RecordChange.Value]) {
            int(Int64(values.count))
            for v in values {
                text(v.name)
                field(v.value)
            }
        }

        mutating func field(_ value: FieldValue) {
            switch value {
            case .null: bytes.append(0)
            case .integer(let i): bytes.append(1); int(i)
            case .real(let d): bytes.append(2); bits(d.bitPattern)
            case .bool(let b): bytes.append(3); flag(b)
            case .text(let s): bytes.append(4); text(s)
            case .longText(let t):
                // Its summary: the text stays in the store (the state may be closed when it is read back).
                let print = t.fingerprint
                bytes.append(12); int(Int64(t.byteCount)); text(t.prefix); int(Int64(print?.count ?? -1)); text(print?.sha256 ?? "")
            case .date(let iso, let seconds): bytes.append(5); text(iso); bits(seconds.bitPattern)
            case .uuid(let s): bytes.append(6); text(s)
            case .decimal(let s): bytes.append(7); text(s)
            case .binary(let b):
                bytes.append(8)
                optional(b.size)
                text(b.prefixHex)
                switch b.storage {
                case .plain: bytes.append(0)
                case .inline: bytes.append(1)
                case .external(let file):
                    bytes.append(2)
                    text(file.name)
                    text(file.relativePath)
                    bytes.append(file.kind.rawValue)
                    optional(file.size)
                    // The file's hash goes with it: a version read back says what rows says.
                    flag(file.sha256 != nil)
                    if let sha256 = file.sha256 { text(sha256) }
                }
            case .archived(let tree): bytes.append(9); plist(tree)
            case .composite(let elements):
                bytes.append(10)
                int(Int64(elements.count))
                for e in elements {
                    text(e.name)
                    field(e.value)
                }
            case .object(let entity, let pk): bytes.append(11); text(entity); int(pk)
            }
        }

        mutating func plist(_ value: PlistValue) {
            switch value {
            case .string(let s): bytes.append(0); text(s)
            case .integer(let i): bytes.append(1); int(i)
            case .unsignedInteger(let u): bytes.append(2); bits(u)
            case .real(let d): bytes.append(3); bits(d.bitPattern)
            case .bool(let b): bytes.append(4); flag(b)
            case .date(let d): bytes.append(5); bits(d.bitPattern)
            case .data(let d): bytes.append(6); int(Int64(d.count)); bytes.append(contentsOf: d)
            case .array(let items):
                bytes.append(7)
                int(Int64(items.count))
                for item in items { plist(item) }
            case .dictionary(let entries):
                bytes.append(8)
                int(Int64(entries.count))
                for key in entries.keys.sorted() {
                    text(key)
                    plist(entries[key]!)
                }
            case .uid(let u): bytes.append(9); bits(u)
            }
        }
    }

    /// Reads what `Encoder` wrote; nil at the first byte that does not fit (never traps).
    struct Decoder {
        let bytes: [UInt8]
        var at = 0

        mutating func byte() -> UInt8? {
            guard at < bytes.count else { return nil }
            defer { at += 1 }
            return bytes[at]
        }
        mutating func bits() -> UInt64? {
            guard bytes.count - at >= 8 else { return nil }
            var v: UInt64 = 0
            for i in at ..< at + 8 { v = v << 8 | UInt64(bytes[i]) }
            at += 8
            return v
        }
        mutating func int() -> Int64? { bits().map { Int64(bitPattern: $0) } }
        mutating func count() -> Int? {
            guard let n = int(), n >= 0, n <= Int64(bytes.count - at) else { return nil }
            return Int(n)
        }
        mutating func flag() -> Bool? {
            switch byte() {
            case 0: return false
            case 1: return true
            default: return nil
            }
        }
        mutating func text() -> String? {
            guard let n = count() else { return nil }
            defer { at += n }
            return String(decoding: bytes[at ..< at + n], as: UTF8.self)
        }
        mutating func optional() -> Int?? {
            guard let present = flag() else { return nil }
            guard present else { return .some(nil) }
            guard let v = int() else { return nil }
            return .some(Int(v))
        }

        mutating func values() -> [RecordChange.Value]? {
            guard let n = count() else { return nil }
            var out: [RecordChange.Value] = []
            out.reserveCapacity(n)
            for _ in 0 ..< n {
                guard let name = text(), let value = field(depth: 0) else { return nil }
                out.append(RecordChange.Value(name: name, value: value))
            }
            return out
        }

        mutating func field(depth: Int) -> FieldValue? {
            guard depth < 256, let tag = byte() else { return nil }
            switch tag {
            case 0: return .null
            case 1: return int().map { .integer($0) }
            case 2: return bits().map { .real(Double(bitPattern: $0)) }
            case 3: return flag().map { .bool($0) }
            case 4: return text().map { .text($0) }
            case 5:
                guard let iso = text(), let seconds = bits() else { return nil }
                return .date(iso: iso, referenceSeconds: Double(bitPattern: seconds))
            case 6: return text().map { .uuid($0) }
            case 7: return text().map { .decimal($0) }
            case 8:
                guard let size = optional(), let prefix = text(), let kind = byte() else { return nil }
                let storage: BinaryValue.Storage
                switch kind {
                case 0: storage = .plain
                case 1: storage = .inline
                case 2:
                    guard let name = text(), let path = text(), let kind = byte().flatMap(ExternalFile.Kind.init(rawValue:)),
                          let fileSize = optional(), let hashed = flag() else { return nil }
                    var sha256: String?
                    if hashed {
                        guard let hash = text() else { return nil }
                        sha256 = hash
                    }
                    storage = .external(ExternalFile(name: name, relativePath: path, kind: kind, size: fileSize, sha256: sha256))
                default: return nil
                }
                return .binary(BinaryValue(size: size, prefixHex: prefix, storage: storage))
            case 9: return plist(depth: depth + 1).map { .archived($0) }
            case 10:
                guard let n = count() else { return nil }
                var elements: [FieldValue.CompositeElement] = []
                for _ in 0 ..< n {
                    guard let name = text(), let value = field(depth: depth + 1) else { return nil }
                    elements.append(.init(name: name, value: value))
                }
                return .composite(elements)
            case 11:
                guard let entity = text(), let pk = int() else { return nil }
                return .object(entity: entity, pk: pk)
            case 12:
                guard let size = int().flatMap({ Int(exactly: $0) }), let prefix = text(),
                      let count = int().flatMap({ Int(exactly: $0) }), let sha = text() else { return nil }
                return .longText(LongText(byteCount: size, prefix: prefix, fingerprint: (count, sha)))
            default: return nil
            }
        }

        mutating func plist(depth: Int) -> PlistValue? {
            guard depth < 256, let tag = byte() else { return nil }
            switch tag {
            case 0: return text().map { .string($0) }
            case 1: return int().map { .integer($0) }
            case 2: return bits().map { .unsignedInteger($0) }
            case 3: return bits().map { .real(Double(bitPattern: $0)) }
            case 4: return flag().map { .bool($0) }
            case 5: return bits().map { .date(Double(bitPattern: $0)) }
            case 6:
                guard let n = count() else { return nil }
                defer { at += n }
                return .data(Data(bytes[at ..< at + n]))
            case 7:
                guard let n = count() else { return nil }
                var items: [PlistValue] = []
                for _ in 0 ..< n {
                    guard let item = plist(depth: depth + 1) else { return nil }
                    items.append(item)
                }
                return .array(items)
            case 8:
                guard let n = count() else { return nil }
                var entries: [String: PlistValue] = [:]
                for _ in 0 ..< n {
                    guard let key = text(), let value = plist(depth: depth + 1) else { return nil }
                    entries[key] = value
                }
                return .dictionary(entries)
            case 9: return bits().map { .uid($0) }
            default: return nil
            }
        }
    }
}
