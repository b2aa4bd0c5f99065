import Foundation

/// The `BackupKeyBag` of an encrypted backup's Manifest.plist: a run of tag-length-value
/// records (4-byte tag, 4-byte big-endian length). The bag's own fields come first (VERS, TYPE,
/// UUID, HMCK, WRAP, SALT, ITER, and from iOS 10.2 DPWT, DPIC, DPSL); then each protection class:
/// UUID, CLAS, WRAP, KTYP, WPKY (its key, wrapped with the key derived from the password).
struct BackupKeybag {
    struct ClassKey {
        let protectionClass: UInt32
        let wrap: UInt32
        let wrappedKey: Data
    }

    var version: UInt32?
    var type: UInt32?
    var salt: Data?
    var iterations: UInt32?
    /// The SHA-256 round in front of the SHA-1 one, added in iOS 10.2.
    var doubleProtectionSalt: Data?
    var doubleProtectionIterations: UInt32?
    var classes: [UInt32: ClassKey] = [:]

    /// Iteration counts past these are not a backup Apple wrote (iOS uses 10,000,000 and 10,000)
    /// and would keep the machine busy for hours.
    static let maxDoubleProtectionIterations: UInt32 = 50_000_000
    static let maxIterations: UInt32 = 10_000_000

    /// Why a keybag cannot be used, in words for `BackupError.keybagDamaged`.
    struct Damage: Error { let detail: String }

    /// The class WRAP bit saying a class key is wrapped with the password's key.
    static let wrappedWithPassword: UInt32 = 2

    init(_ data: Data) throws(Damage) {
        let bytes = [UInt8](data)
        var offset = 0
        var current: (uuid: Bool, clas: UInt32?, wrap: UInt32?, wpky: Data?)?
        var sawBagUUID = false
        var sawBagWrap = false
        func finishClass() throws(Damage) {
            guard let c = current else { return }
            guard let clas = c.clas else { throw Damage(detail: "a class entry has no CLAS") }
            if let wpky = c.wpky {
                classes[clas] = ClassKey(protectionClass: clas, wrap: c.wrap ?? 0, wrappedKey: wpky)
            }
            current = nil
        }
        func u32(_ value: [UInt8], _ tag: String) throws(Damage) -> UInt32 {
            guard value.count == 4 else { throw Damage(detail: "\(tag) is \(value.count) bytes, not 4") }
            return value.reduce(0) { $0 << 8 | UInt32($1) }
        }
        while offset < bytes.count {
            guard bytes.count - offset >= 8 else {
                throw Damage(detail: "it ends \(bytes.count - offset) bytes into a record header at byte \(offset)")
            }
            let tag = String(decoding: bytes[offset..<offset + 4], as: UTF8.self)
            let length = Int(bytes[offset + 4..<offset + 8].reduce(UInt32(0)) { $0 << 8 | UInt32($1) })
            guard length <= bytes.count - offset - 8 else {
                throw Damage(detail: "its \(Self.printable(tag)) record says \(length) bytes but only \(bytes.count - offset - 8) follow")
            }
            let value = Array(bytes[offset + 8..<offset + 8 + length])
            offset += 8 + length
            switch tag {
            case "UUID" where !sawBagUUID:
                sawBagUUID = true
            case "UUID":
                try finishClass()
                current = (true, nil, nil, nil)
            case "WRAP" where !sawBagWrap && current == nil:
                sawBagWrap = true
            case "CLAS", "WRAP", "KTYP", "WPKY", "PBKY":
                guard current != nil else { throw Damage(detail: "a \(tag) record comes before any class entry") }
                if tag == "CLAS" { current?.clas = try u32(value, tag) }
                if tag == "WRAP" { current?.wrap = try u32(value, tag) }
                if tag == "WPKY" { current?.wpky = Data(value) }
            case "VERS": version = try u32(value, tag)
            case "TYPE": type = try u32(value, tag)
            case "SALT": salt = Data(value)
            case "ITER": iterations = try u32(value, tag)
            case "DPSL": doubleProtectionSalt = Data(value)
            case "DPIC": doubleProtectionIterations = try u32(value, tag)
            default: break   // HMCK, DPWT and tags of later versions are not needed to decrypt
            }
        }
        try finishClass()
        guard let salt, !salt.isEmpty else { throw Damage(detail: "it has no SALT") }
        guard let iterations else { throw Damage(detail: "it has no ITER") }
        guard iterations >= 1, iterations <= Self.maxIterations else {
            throw Damage(detail: "its ITER asks for \(iterations) iterations, outside 1…\(Self.maxIterations)")
        }
        if let dpic = doubleProtectionIterations, dpic < 1 || dpic > Self.maxDoubleProtectionIterations {
            throw Damage(detail: "its DPIC asks for \(dpic) iterations, outside 1…\(Self.maxDoubleProtectionIterations)")
        }
        guard (doubleProtectionSalt == nil) == (doubleProtectionIterations == nil) else {
            throw Damage(detail: "it has one of DPSL and DPIC without the other")
        }
        guard !classes.isEmpty else { throw Damage(detail: "it holds no class keys") }
    }

    /// Whether the password goes through the SHA-256 round of iOS 10.2 and later.
    var hasDoubleProtection: Bool { doubleProtectionSalt != nil }

    /// The class keys, unwrapped with the key the password derives; nil when the password is not
    /// the one (RFC 3394's integrity check fails on the first class key).
    func unlock(with password: SecretBytes) throws(BackupCryptoError) -> [UInt32: SecretBytes]? {
        guard let salt, let iterations else { return nil }
        var key: SecretBytes
        if let dpsl = doubleProtectionSalt, let dpic = doubleProtectionIterations {
            let round1 = try BackupCrypto.pbkdf2(password, salt: dpsl, iterations: Int(dpic), digest: .sha256)
            defer { round1.clear() }
            key = try BackupCrypto.pbkdf2(round1, salt: salt, iterations: Int(iterations), digest: .sha1)
        } else {
            key = try BackupCrypto.pbkdf2(password, salt: salt, iterations: Int(iterations), digest: .sha1)
        }
        defer { key.clear() }
        var unlocked: [UInt32: SecretBytes] = [:]
        for entry in classes.values.sorted(by: { $0.protectionClass < $1.protectionClass })
        where entry.wrap & Self.wrappedWithPassword != 0 {
            guard let classKey = try BackupCrypto.unwrap(entry.wrappedKey, with: key) else {
                for k in unlocked.values { k.clear() }
                return nil
            }
            unlocked[entry.protectionClass] = classKey
        }
        return unlocked.isEmpty ? nil : unlocked
    }

    static func printable(_ tag: String) -> String {
        tag.unicodeScalars.allSatisfy { $0.isASCII && $0.value >= 0x20 && $0.value < 0x7f } ? tag : "unnamed"
    }
}
