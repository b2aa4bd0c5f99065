import Foundation

/// A read-only view of an `NSKeyedArchiver` archive that never instantiates classes.
///
/// Core Data's `Z_MODELCACHE` is an archived `NSManagedObjectModel`, which
/// cannot be unarchived on Linux (no Core Data) and should not be unarchived
/// from untrusted devices anyway. The archive is a plist with `$objects` (a
/// flat table whose entry 0 is `$null`), `$top` (named roots) and UIDs that
/// point into the table. This type hands out `Reference`s and decodes one
/// object at a time, so the deliberately cyclic graphs of model caches
/// (entity ↔ model, relationship ↔ inverse) need no special care. Only
/// `json(_:)`, which builds a tree, has to detect cycles and bound depth.
///
/// Every UID read from the archive is checked against `$objects`; an
/// out-of-range UID is an error and `$null` (UID 0) reads as nil.
public struct KeyedArchive: Sendable {
    /// A UID: the index of an object in `$objects`.
    public struct Reference: Hashable, Comparable, Sendable, CustomStringConvertible {
        public let uid: UInt64

        public init(uid: UInt64) { self.uid = uid }

        /// UID 0, which always names the `$null` placeholder.
        public static let null = Reference(uid: 0)

        public var isNull: Bool { uid == 0 }

        /// The reference as a plist UID, for writing it into an object's fields.
        public var plistValue: PlistValue { .uid(uid) }

        public static func < (lhs: Reference, rhs: Reference) -> Bool { lhs.uid < rhs.uid }

        public var description: String { "UID(\(uid))" }
    }

    /// One entry of `$objects` with its class resolved.
    public struct ArchivedObject: Sendable {
        public let reference: Reference
        /// The `$classname` of the object's class, or nil for a plain value (string, number, data).
        public let className: String?
        /// The class and its superclasses, most specific first (`$classes`).
        public let classes: [String]
        /// The object's encoded fields without `$class`; empty for plain values.
        public let fields: [String: PlistValue]
        /// The entry exactly as it is stored in `$objects`.
        public let raw: PlistValue

        /// True when the object's class, or one of its superclasses, is `name`.
        public func isKind(of name: String) -> Bool { classes.contains(name) || className == name }

        /// The inline integer stored in field `key`, if any.
        public func int(_ key: String) -> Int64? { fields[key]?.intValue }

        /// The inline boolean stored in field `key`, if any.
        public func bool(_ key: String) -> Bool? { fields[key]?.boolValue }

        /// The inline real (or integer) stored in field `key`, if any.
        public func double(_ key: String) -> Double? { fields[key]?.doubleValue }
    }

    /// The archiver that wrote the archive (normally `NSKeyedArchiver`).
    public let archiver: String
    /// `$version` (Apple writes 100000), or nil when absent.
    public let version: Int64?
    /// The `$objects` table, entry 0 being `$null`.
    public let objects: [PlistValue]
    /// The named roots from `$top`.
    public let topReferences: [String: Reference]

    /// Archivers whose output has the keyed-archive layout.
    public static let knownArchivers: Set<String> = ["NSKeyedArchiver"]

    /// Decodes a binary plist and checks its keyed-archive structure.
    public init(data: Data, limits: BinaryPlist.Limits = .default) throws(KeyedArchiveError) {
        let plist: PlistValue
        do {
            plist = try BinaryPlist.decode(data, limits: limits)
        } catch {
            throw .plist(error)
        }
        try self.init(plist: plist)
    }

    /// Checks an already-decoded plist's keyed-archive structure.
    public init(plist: PlistValue) throws(KeyedArchiveError) {
        guard case .dictionary(let root) = plist else { throw .notKeyedArchive }
        guard let archiver = root["$archiver"]?.stringValue else { throw .missingArchiver }
        guard Self.knownArchivers.contains(archiver) else { throw .unsupportedArchiver(archiver) }
        guard let objectsValue = root["$objects"] else { throw .missingObjects }
        guard case .array(let objects) = objectsValue, !objects.isEmpty else { throw .objectsNotArray }
        guard let topValue = root["$top"] else { throw .missingTop }
        guard case .dictionary(let top) = topValue else { throw .topNotDictionary }
        var references: [String: Reference] = [:]
        for (key, value) in top {
            guard case .uid(let uid) = value else { throw .notAReference(key: key) }
            guard uid < UInt64(objects.count) else { throw .uidOutOfRange(uid, objectCount: objects.count) }
            references[key] = Reference(uid: uid)
        }
        self.archiver = archiver
        self.version = root["$version"]?.intValue
        self.objects = objects
        self.topReferences = references
    }

    // MARK: - Navigation

    /// The object archived under `$top.root`, as `NSKeyedArchiver.archivedData(withRootObject:)` writes it.
    public var root: Reference {
        get throws(KeyedArchiveError) { try top("root") }
    }

    /// The object archived under `key` in `$top`.
    public func top(_ key: String) throws(KeyedArchiveError) -> Reference {
        guard let reference = topReferences[key] else { throw .missingTopKey(key) }
        return reference
    }

    /// Checks that `reference` names an entry of `$objects`.
    public func validate(_ reference: Reference) throws(KeyedArchiveError) -> Reference {
        guard reference.uid < UInt64(objects.count) else {
            throw .uidOutOfRange(reference.uid, objectCount: objects.count)
        }
        return reference
    }

    /// The raw `$objects` entry for `reference`, or nil for `$null`.
    public func rawValue(_ reference: Reference) throws(KeyedArchiveError) -> PlistValue? {
        let checked = try validate(reference)
        if checked.isNull { return nil }
        // The check above keeps the index in range.
        return objects[Int(checked.uid)]
    }

    /// The object for `reference` with its class resolved, or nil for `$null`.
    public func object(_ reference: Reference) throws(KeyedArchiveError) -> ArchivedObject? {
        guard let raw = try rawValue(reference) else { return nil }
        guard case .dictionary(var fields) = raw, let classValue = fields["$class"] else {
            return ArchivedObject(reference: reference, className: nil, classes: [], fields: [:], raw: raw)
        }
        fields["$class"] = nil
        guard case .uid(let classUID) = classValue else { throw .malformedClass(reference) }
        guard let classObject = try rawValue(Reference(uid: classUID)),
              let className = classObject["$classname"]?.stringValue
        else { throw .malformedClass(reference) }
        let classes = (classObject["$classes"]?.arrayValue ?? []).compactMap(\.stringValue)
        return ArchivedObject(reference: reference, className: className,
                              classes: classes.isEmpty ? [className] : classes, fields: fields, raw: raw)
    }

    /// The reference stored in field `key` of `object`; nil when absent or `$null`.
    public func reference(_ key: String, in object: ArchivedObject) throws(KeyedArchiveError) -> Reference? {
        guard let value = object.fields[key] else { return nil }
        guard case .uid(let uid) = value else { throw .notAReference(key: key) }
        let reference = try validate(Reference(uid: uid))
        return reference.isNull ? nil : reference
    }

    /// The reference stored in field `key` of the object at `reference`.
    public func reference(_ key: String, of reference: Reference) throws(KeyedArchiveError) -> Reference? {
        guard let object = try object(reference) else { return nil }
        return try self.reference(key, in: object)
    }

    // MARK: - Foundation values

    /// A string stored inline or as an `NSString`/`NSMutableString` object.
    public func string(_ reference: Reference) throws(KeyedArchiveError) -> String? {
        guard let object = try object(reference) else { return nil }
        if case .string(let string) = object.raw { return string }
        if object.isKind(of: "NSString") {
            if let string = object.fields["NS.string"]?.stringValue { return string }
            if let bytes = object.fields["NS.bytes"]?.dataValue, let string = String(data: bytes, encoding: .utf8) {
                return string
            }
        }
        throw .typeMismatch(reference, expected: "string", found: Self.kind(of: object))
    }

    /// An integer stored inline (archived `NSNumber`s are plain plist integers).
    public func int(_ reference: Reference) throws(KeyedArchiveError) -> Int64? {
        guard let raw = try rawValue(reference) else { return nil }
        guard let int = raw.intValue else {
            throw .typeMismatch(reference, expected: "integer", found: raw.typeName)
        }
        return int
    }

    /// A real or integer stored inline, as a `Double`.
    public func double(_ reference: Reference) throws(KeyedArchiveError) -> Double? {
        guard let raw = try rawValue(reference) else { return nil }
        guard let double = raw.doubleValue else {
            throw .typeMismatch(reference, expected: "real", found: raw.typeName)
        }
        return double
    }

    /// A boolean stored inline.
    public func bool(_ reference: Reference) throws(KeyedArchiveError) -> Bool? {
        guard let raw = try rawValue(reference) else { return nil }
        guard let bool = raw.boolValue else { throw .typeMismatch(reference, expected: "bool", found: raw.typeName) }
        return bool
    }

    /// Bytes stored inline or as an `NSData`/`NSMutableData` object (`NS.data`).
    public func data(_ reference: Reference) throws(KeyedArchiveError) -> Data? {
        guard let object = try object(reference) else { return nil }
        if case .data(let data) = object.raw { return data }
        if object.isKind(of: "NSData"), let data = object.fields["NS.data"]?.dataValue { return data }
        throw .typeMismatch(reference, expected: "data", found: Self.kind(of: object))
    }

    /// An `NSUUID`, from its 16 `NS.uuidbytes`.
    public func uuid(_ reference: Reference) throws(KeyedArchiveError) -> UUID? {
        guard let object = try object(reference) else { return nil }
        guard object.isKind(of: "NSUUID"), let bytes = object.fields["NS.uuidbytes"]?.dataValue, bytes.count == 16
        else { throw .typeMismatch(reference, expected: "NSUUID", found: Self.kind(of: object)) }
        let b = [UInt8](bytes)
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7],
                           b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    /// An `NSDate`, from `NS.time` (seconds since 2001).
    public func date(_ reference: Reference) throws(KeyedArchiveError) -> Date? {
        guard let object = try object(reference) else { return nil }
        if case .date(let seconds) = object.raw { return Date(timeIntervalSinceReferenceDate: seconds) }
        guard object.isKind(of: "NSDate"), let seconds = object.double("NS.time") else {
            throw .typeMismatch(reference, expected: "NSDate", found: Self.kind(of: object))
        }
        return Date(timeIntervalSinceReferenceDate: seconds)
    }

    /// Class names whose instances archive their members as `NS.objects`.
    public static let collectionClasses: Set<String> = [
        "NSArray", "NSMutableArray", "NSSet", "NSMutableSet", "NSOrderedSet", "NSMutableOrderedSet",
    ]

    /// The members of an array, set or ordered set, in archive order.
    public func array(_ reference: Reference) throws(KeyedArchiveError) -> [Reference]? {
        guard let object = try object(reference) else { return nil }
        guard !object.isKind(of: "NSDictionary"), object.classes.contains(where: Self.collectionClasses.contains)
        else { throw .typeMismatch(reference, expected: "NSArray or NSSet", found: Self.kind(of: object)) }
        return try references(in: object, key: "NS.objects", owner: reference)
    }

    /// The entries of an `NSDictionary`/`NSMutableDictionary` (`NS.keys`, `NS.objects`) or of an
    /// `NSKnownKeysDictionary1` (keys from `searchMapping.keys`, values from `values`), in archive order.
    ///
    /// Known-keys dictionaries mark unused slots with their `emptyToken`; those slots are skipped.
    public func dictionary(_ reference: Reference) throws(KeyedArchiveError) -> [(key: Reference, value: Reference)]? {
        guard let object = try object(reference) else { return nil }
        let keys: [Reference]
        let values: [Reference]
        var emptyToken: Reference?
        if object.isKind(of: "NSKnownKeysDictionary1") || object.isKind(of: "NSKnownKeysDictionary") {
            guard let mapping = try self.reference("searchMapping", in: object),
                  let mappingObject = try self.object(mapping),
                  let keysArray = try self.reference("keys", in: mappingObject),
                  let valuesArray = try self.reference("values", in: object),
                  let mappedKeys = try array(keysArray),
                  let mappedValues = try array(valuesArray)
            else { throw .malformedCollection(reference) }
            keys = mappedKeys
            values = mappedValues
            emptyToken = try self.reference("emptyToken", in: object)
        } else if object.isKind(of: "NSDictionary") {
            keys = try references(in: object, key: "NS.keys", owner: reference)
            values = try references(in: object, key: "NS.objects", owner: reference)
        } else {
            throw .typeMismatch(reference, expected: "NSDictionary", found: Self.kind(of: object))
        }
        guard keys.count == values.count else { throw .malformedCollection(reference) }
        var entries: [(key: Reference, value: Reference)] = []
        entries.reserveCapacity(keys.count)
        for (key, value) in zip(keys, values) where value != emptyToken {
            entries.append((key: key, value: value))
        }
        return entries
    }

    /// A dictionary whose keys are strings, as model caches use them, in archive order.
    public func stringKeyedDictionary(_ reference: Reference) throws(KeyedArchiveError) -> [(key: String, value: Reference)]? {
        guard let entries = try dictionary(reference) else { return nil }
        var result: [(key: String, value: Reference)] = []
        result.reserveCapacity(entries.count)
        for entry in entries {
            guard let key = try string(entry.key) else { throw .malformedCollection(reference) }
            result.append((key: key, value: entry.value))
        }
        return result
    }

    /// The UIDs stored as an array in field `key`, each checked against `$objects`.
    private func references(in object: ArchivedObject, key: String, owner: Reference) throws(KeyedArchiveError) -> [Reference] {
        guard let value = object.fields[key] else { return [] }
        guard case .array(let elements) = value else { throw .malformedCollection(owner) }
        var result: [Reference] = []
        result.reserveCapacity(elements.count)
        for element in elements {
            guard case .uid(let uid) = element else { throw .notAReference(key: key) }
            result.append(try validate(Reference(uid: uid)))
        }
        return result
    }

    static func kind(of object: ArchivedObject) -> String {
        object.className ?? object.raw.typeName
    }

    // MARK: - Tree rendering

    /// Renders the object graph under `reference` as a plain `PlistValue` tree.
    ///
    /// Meant for transformable attributes that archive Foundation types:
    /// strings, numbers, data and dates come out as themselves, `NSUUID` as
    /// its uuidString, arrays and sets as arrays, dictionaries as
    /// dictionaries (non-string keys are rendered and, if still not strings,
    /// written as `"<UID n>"`), `NSString`/`NSData`/`NSDate` objects as their
    /// values, and any other class as a dictionary of its fields plus
    /// `"$class"`. `$null` renders as the string `"$null"`, as the archive
    /// itself stores it. Reaching an object again on the same path throws
    /// `.cycle`; nesting beyond `depthLimit` throws `.tooDeep`; more than
    /// `maxValues` rendered values throws `.tooLarge`.
    public func json(_ reference: Reference, depthLimit: Int = 64, maxValues: Int = 100_000) throws(KeyedArchiveError) -> PlistValue {
        var renderer = TreeRenderer(archive: self, depthLimit: depthLimit, maxValues: maxValues)
        return try renderer.render(reference, depth: 0)
    }

    private struct TreeRenderer {
        let archive: KeyedArchive
        let depthLimit: Int
        let maxValues: Int
        var onPath: Set<Reference> = []
        var rendered = 0

        mutating func render(_ reference: Reference, depth: Int) throws(KeyedArchiveError) -> PlistValue {
            rendered += 1
            guard rendered <= maxValues else { throw .tooLarge }
            guard let object = try archive.object(reference) else { return .string("$null") }
            guard object.className != nil else {
                // A bare `$objects` entry can itself be a UID, or an array of UIDs: it needs the same
                // cycle and depth guards as an object, or a UID pointing at itself recurses forever.
                guard !onPath.contains(reference) else { throw .cycle(reference) }
                guard depth < depthLimit else { throw .tooDeep }
                onPath.insert(reference)
                defer { onPath.remove(reference) }
                return try inline(object.raw, depth: depth + 1)
            }
            guard !onPath.contains(reference) else { throw .cycle(reference) }
            guard depth < depthLimit else { throw .tooDeep }
            onPath.insert(reference)
            defer { onPath.remove(reference) }

            if object.isKind(of: "NSUUID"), let uuid = try? archive.uuid(reference) {
                return .string(uuid.uuidString)
            }
            if object.isKind(of: "NSDate"), let seconds = object.double("NS.time") { return .date(seconds) }
            if object.isKind(of: "NSString"), let string = try? archive.string(reference) { return .string(string) }
            if object.isKind(of: "NSData"), let data = object.fields["NS.data"]?.dataValue { return .data(data) }
            if object.isKind(of: "NSDictionary") {
                guard let entries = try archive.dictionary(reference) else { return .string("$null") }
                var result: [String: PlistValue] = [:]
                for entry in entries {
                    let key: String
                    switch try render(entry.key, depth: depth + 1) {
                    case .string(let string): key = string
                    case .integer(let int): key = String(int)
                    default: key = "<UID \(entry.key.uid)>"
                    }
                    result[key] = try render(entry.value, depth: depth + 1)
                }
                return .dictionary(result)
            }
            if object.classes.contains(where: KeyedArchive.collectionClasses.contains) {
                guard let members = try archive.array(reference) else { return .string("$null") }
                var result: [PlistValue] = []
                result.reserveCapacity(members.count)
                for member in members { result.append(try render(member, depth: depth + 1)) }
                return .array(result)
            }
            var result: [String: PlistValue] = [:]
            // Sorted so that which error a damaged graph reports does not depend on hashing.
            for (key, value) in object.fields.sorted(by: { $0.key < $1.key }) {
                result[key] = try inline(value, depth: depth + 1)
            }
            result["$class"] = .string(object.className ?? "")
            return .dictionary(result)
        }

        /// Renders a field value, following UIDs (also inside inline arrays and dictionaries).
        mutating func inline(_ value: PlistValue, depth: Int) throws(KeyedArchiveError) -> PlistValue {
            rendered += 1
            guard rendered <= maxValues else { throw .tooLarge }
            switch value {
            case .uid(let uid):
                return try render(try archive.validate(Reference(uid: uid)), depth: depth)
            case .array(let elements):
                guard depth < depthLimit else { throw .tooDeep }
                var result: [PlistValue] = []
                for element in elements { result.append(try inline(element, depth: depth + 1)) }
                return .array(result)
            case .dictionary(let entries):
                guard depth < depthLimit else { throw .tooDeep }
                var result: [String: PlistValue] = [:]
                for (key, element) in entries.sorted(by: { $0.key < $1.key }) {
                    result[key] = try inline(element, depth: depth + 1)
                }
                return .dictionary(result)
            default:
                return value
            }
        }
    }
}

/// Why a keyed archive could not be read.
public enum KeyedArchiveError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The bytes are not a readable binary plist.
    case plist(BinaryPlistError)
    /// The plist's top level is not a dictionary.
    case notKeyedArchive
    /// `$archiver` is missing or not a string.
    case missingArchiver
    /// `$archiver` names an archiver whose layout is not known.
    case unsupportedArchiver(String)
    /// `$objects` is missing.
    case missingObjects
    /// `$objects` is not a non-empty array.
    case objectsNotArray
    /// `$top` is missing.
    case missingTop
    /// `$top` is not a dictionary.
    case topNotDictionary
    /// `$top` has no entry with this name.
    case missingTopKey(String)
    /// A value expected to be a UID (under `key`) is something else.
    case notAReference(key: String)
    /// A UID points past the end of `$objects`.
    case uidOutOfRange(UInt64, objectCount: Int)
    /// The object's `$class` is not a UID naming a dictionary with `$classname`.
    case malformedClass(KeyedArchive.Reference)
    /// The object is not of the kind the caller asked for.
    case typeMismatch(KeyedArchive.Reference, expected: String, found: String)
    /// A collection's key and value lists are missing, malformed or of different lengths.
    case malformedCollection(KeyedArchive.Reference)
    /// Rendering reached an object that contains itself.
    case cycle(KeyedArchive.Reference)
    /// Rendering went deeper than the depth limit.
    case tooDeep
    /// Rendering produced more values than the limit.
    case tooLarge

    public var description: String {
        switch self {
        case .plist(let error): return "The keyed archive is not a valid plist: \(error)"
        case .notKeyedArchive: return "The plist is not a keyed archive (its top level is not a dictionary)."
        case .missingArchiver: return "The keyed archive has no $archiver string."
        case .unsupportedArchiver(let name): return "The archiver \"\(name)\" is not supported."
        case .missingObjects: return "The keyed archive has no $objects table."
        case .objectsNotArray: return "The keyed archive's $objects is not a non-empty array."
        case .missingTop: return "The keyed archive has no $top dictionary."
        case .topNotDictionary: return "The keyed archive's $top is not a dictionary."
        case .missingTopKey(let key): return "The keyed archive's $top has no \"\(key)\" entry."
        case .notAReference(let key): return "The value under \"\(key)\" is not an object reference."
        case .uidOutOfRange(let uid, let count):
            return "UID \(uid) points past the end of $objects (\(count) objects)."
        case .malformedClass(let ref): return "Object \(ref) has a malformed $class."
        case .typeMismatch(let ref, let expected, let found):
            return "Object \(ref) is \(found), not \(expected)."
        case .malformedCollection(let ref): return "Collection \(ref) has malformed keys or values."
        case .cycle(let ref): return "Object \(ref) contains itself."
        case .tooDeep: return "The archived object graph is nested too deeply to render."
        case .tooLarge: return "The archived object graph is too large to render."
        }
    }
}
