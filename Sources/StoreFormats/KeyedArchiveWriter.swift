import Foundation

/// Builds `NSKeyedArchiver` archives in Apple's layout without Foundation's archiver.
///
/// The store builder writes `Z_MODELCACHE` blobs, which are archived
/// `NSManagedObjectModel` graphs. Those graphs are cyclic (an entity points
/// at its model, a relationship at its inverse), so objects are created in
/// two steps: `reserve()` hands out a UID, and `set(_:className:classes:fields:)`
/// fills it in once the objects it points at exist. Like Apple's archiver,
/// equal strings and numbers share one UID (unless asked otherwise) and each
/// class description (`$classname`, `$classes`) is written once.
///
/// Mistakes (setting a UID twice, leaving one unset, pointing at a UID that
/// was never handed out) are recorded and reported by `finish`, so building
/// code stays free of `try` until the end.
public final class KeyedArchiveWriter {
    public typealias Reference = KeyedArchive.Reference

    /// The `$version` Apple's archiver writes.
    public static let archiverVersion: Int64 = 100_000
    /// The string `NSKnownKeysDictionary1` archives use to mark unused value slots.
    public static let knownKeysEmptyToken = "__empty_slot_token_4c24_98dc_ac1e_b773__"

    /// Superclass chains of the classes model caches and Foundation archives use,
    /// so callers need only name the class.
    public static let knownClassChains: [String: [String]] = {
        var chains: [String: [String]] = [:]
        for chain in [
            ["NSArray", "NSObject"], ["NSMutableArray", "NSArray", "NSObject"],
            ["NSSet", "NSObject"], ["NSMutableSet", "NSSet", "NSObject"],
            ["NSOrderedSet", "NSObject"], ["NSMutableOrderedSet", "NSOrderedSet", "NSObject"],
            ["NSDictionary", "NSObject"], ["NSMutableDictionary", "NSDictionary", "NSObject"],
            ["NSKnownKeysDictionary1", "NSKnownKeysDictionary", "NSMutableDictionary", "NSDictionary", "NSObject"],
            ["NSKnownKeysMappingStrategy1", "NSKnownKeysMappingStrategy", "NSObject"],
            ["NSString", "NSObject"], ["NSMutableString", "NSString", "NSObject"],
            ["NSData", "NSObject"], ["NSMutableData", "NSData", "NSObject"],
            ["NSUUID", "NSObject"], ["NSDate", "NSObject"], ["NSNull", "NSObject"], ["NSURL", "NSObject"],
            ["NSManagedObjectModel", "NSObject"], ["NSEntityDescription", "NSObject"],
            ["NSAttributeDescription", "NSPropertyDescription", "NSObject"],
            ["NSRelationshipDescription", "NSPropertyDescription", "NSObject"],
            ["NSFetchedPropertyDescription", "NSPropertyDescription", "NSObject"],
            ["NSDerivedAttributeDescription", "NSAttributeDescription", "NSPropertyDescription", "NSObject"],
            ["NSCompositeAttributeDescription", "NSAttributeDescription", "NSPropertyDescription", "NSObject"],
            ["NSFetchIndexDescription", "NSObject"], ["NSFetchIndexElementDescription", "NSObject"],
            ["NSFetchRequest", "NSPersistentStoreRequest", "NSObject"],
        ] {
            chains[chain[0]] = chain
        }
        return chains
    }()

    private enum NumberKey: Hashable {
        case integer(Int64)
        case real(UInt64)
        case bool(Bool)
    }

    /// `$objects`; nil marks a reserved entry not yet set.
    private var objects: [PlistValue?] = [.string("$null")]
    private var strings: [[UInt8]: Reference] = [:]
    private var numbers: [NumberKey: Reference] = [:]
    private var classes: [[String]: Reference] = [:]
    private var problems: [KeyedArchiveWriterError] = []

    public init() {}

    /// The number of `$objects` entries so far, `$null` included.
    public var objectCount: Int { objects.count }

    // MARK: - Objects

    /// Hands out a UID to fill in later with `set(_:className:classes:fields:)`.
    public func reserve() -> Reference {
        objects.append(nil)
        return Reference(uid: UInt64(objects.count - 1))
    }

    /// Fills in a reserved UID with an instance of `className`.
    ///
    /// `classes` defaults to the known chain for `className`, or
    /// `[className, "NSObject"]`. `fields` hold inline values and references
    /// (`reference.plistValue`); `$class` is added here.
    public func set(_ reference: Reference, className: String, classes: [String]? = nil, fields: [String: PlistValue]) {
        guard reference.uid > 0, reference.uid < UInt64(objects.count) else {
            problems.append(.unknownReference(reference))
            return
        }
        let index = Int(reference.uid)
        guard objects[index] == nil else {
            problems.append(.alreadySet(reference))
            return
        }
        guard fields["$class"] == nil else {
            problems.append(.reservedField("$class"))
            return
        }
        var entry = fields
        entry["$class"] = classReference(className: className, classes: classes).plistValue
        objects[index] = .dictionary(entry)
    }

    /// Appends an instance of `className` whose fields are already known.
    public func object(className: String, classes: [String]? = nil, fields: [String: PlistValue]) -> Reference {
        let reference = reserve()
        set(reference, className: className, classes: classes, fields: fields)
        return reference
    }

    /// Appends a plain plist value as its own `$objects` entry, never shared.
    public func value(_ value: PlistValue) -> Reference {
        objects.append(value)
        return Reference(uid: UInt64(objects.count - 1))
    }

    /// The UID of the class description for `className`, written on first use.
    @discardableResult
    public func classReference(className: String, classes: [String]? = nil) -> Reference {
        let chain = classes ?? Self.knownClassChains[className] ?? [className, "NSObject"]
        let key = [className] + chain
        if let existing = self.classes[key] { return existing }
        let reference = value(.dictionary([
            "$classname": .string(className),
            "$classes": .array(chain.map(PlistValue.string)),
        ]))
        self.classes[key] = reference
        return reference
    }

    // MARK: - Foundation values

    /// A string; equal strings share one UID unless `interned` is false.
    ///
    /// Apple's archiver shares by object identity, so a real archive may
    /// hold the same text twice (e.g. an entity name and its class name);
    /// pass `interned: false` to reproduce that.
    public func string(_ string: String, interned: Bool = true) -> Reference {
        guard interned else { return value(.string(string)) }
        let key = Array(string.utf8)
        if let existing = strings[key] { return existing }
        let reference = value(.string(string))
        strings[key] = reference
        return reference
    }

    /// An integer (an archived `NSNumber`), shared with equal integers.
    public func int(_ int: Int64) -> Reference { number(.integer(int), .integer(int)) }

    /// A real (an archived `NSNumber`), shared with bit-identical reals.
    public func double(_ double: Double) -> Reference { number(.real(double.bitPattern), .real(double)) }

    /// A boolean (an archived `NSNumber`), shared with equal booleans.
    public func bool(_ bool: Bool) -> Reference { number(.bool(bool), .bool(bool)) }

    private func number(_ key: NumberKey, _ plist: PlistValue) -> Reference {
        if let existing = numbers[key] { return existing }
        let reference = value(plist)
        numbers[key] = reference
        return reference
    }

    /// Bytes (an archived `NSData`), stored inline as NSKeyedArchiver does.
    public func data(_ data: Data) -> Reference { value(.data(data)) }

    /// An `NSUUID` with its 16 `NS.uuidbytes`.
    public func uuid(_ uuid: UUID) -> Reference {
        let bytes = withUnsafeBytes(of: uuid.uuid) { Data($0) }
        return object(className: "NSUUID", fields: ["NS.uuidbytes": .data(bytes)])
    }

    /// An `NSDate` with its `NS.time` (seconds since 2001).
    public func date(_ date: Date) -> Reference {
        object(className: "NSDate", fields: ["NS.time": .real(date.timeIntervalSinceReferenceDate)])
    }

    /// An array (`NS.objects`), as `NSArray` or a subclass such as `NSMutableArray`.
    public func array(_ members: [Reference], className: String = "NSArray") -> Reference {
        object(className: className, fields: ["NS.objects": .array(members.map(\.plistValue))])
    }

    /// A set (`NS.objects`), as `NSSet` or a subclass such as `NSMutableSet`.
    public func set(members: [Reference], className: String = "NSSet") -> Reference {
        array(members, className: className)
    }

    /// A dictionary (`NS.keys`, `NS.objects`), as `NSDictionary` or a subclass.
    public func dictionary(keys: [Reference], values: [Reference], className: String = "NSDictionary") -> Reference {
        if keys.count != values.count { problems.append(.countMismatch(keys: keys.count, values: values.count)) }
        return object(className: className, fields: [
            "NS.keys": .array(keys.map(\.plistValue)),
            "NS.objects": .array(values.map(\.plistValue)),
        ])
    }

    /// An `NSMutableDictionary` (`NS.keys`, `NS.objects`).
    public func mutableDictionary(keys: [Reference], values: [Reference]) -> Reference {
        dictionary(keys: keys, values: values, className: "NSMutableDictionary")
    }

    /// An `NSKnownKeysDictionary1` in the layout of Core Data's model caches.
    ///
    /// The dictionary holds `values` (an NSArray), `searchMapping` (an
    /// `NSKnownKeysMappingStrategy1` with `keys`, an NSArray, and `length`),
    /// `emptyToken` (a marker string) and `version` 1.
    public func knownKeysDictionary(keys: [Reference], values: [Reference]) -> Reference {
        if keys.count != values.count { problems.append(.countMismatch(keys: keys.count, values: values.count)) }
        let dictionary = reserve()
        let mapping = reserve()
        let keyArray = array(keys)
        set(mapping, className: "NSKnownKeysMappingStrategy1", fields: [
            "keys": keyArray.plistValue,
            "length": .integer(Int64(keys.count)),
            "version": .integer(1),
        ])
        let emptyToken = string(Self.knownKeysEmptyToken)
        let valueArray = array(values)
        set(dictionary, className: "NSKnownKeysDictionary1", fields: [
            "values": valueArray.plistValue,
            "searchMapping": mapping.plistValue,
            "emptyToken": emptyToken.plistValue,
            "version": .integer(1),
        ])
        return dictionary
    }

    // MARK: - Finishing

    /// The archive as a plist, with `root` under `$top.root`.
    public func plist(root: Reference) throws(KeyedArchiveWriterError) -> PlistValue {
        try plist(top: ["root": root])
    }

    /// The archive as a plist with several named roots.
    public func plist(top: [String: Reference]) throws(KeyedArchiveWriterError) -> PlistValue {
        if let problem = problems.first { throw problem }
        var table: [PlistValue] = []
        table.reserveCapacity(objects.count)
        for (index, entry) in objects.enumerated() {
            guard let entry else { throw .unsetReference(Reference(uid: UInt64(index))) }
            try checkReferences(in: entry)
            table.append(entry)
        }
        var topEntries: [String: PlistValue] = [:]
        for (key, reference) in top {
            guard reference.uid < UInt64(objects.count) else { throw .unknownReference(reference) }
            topEntries[key] = reference.plistValue
        }
        return .dictionary([
            "$archiver": .string("NSKeyedArchiver"),
            "$version": .integer(Self.archiverVersion),
            "$top": .dictionary(topEntries),
            "$objects": .array(table),
        ])
    }

    /// The archive as binary plist bytes, with `root` under `$top.root`.
    public func finish(root: Reference) throws(KeyedArchiveWriterError) -> Data {
        BinaryPlistWriter.encode(try plist(root: root))
    }

    /// The archive as binary plist bytes with several named roots.
    public func finish(top: [String: Reference]) throws(KeyedArchiveWriterError) -> Data {
        BinaryPlistWriter.encode(try plist(top: top))
    }

    private func checkReferences(in value: PlistValue) throws(KeyedArchiveWriterError) {
        switch value {
        case .uid(let uid):
            guard uid < UInt64(objects.count) else { throw .unknownReference(Reference(uid: uid)) }
        case .array(let elements):
            for element in elements { try checkReferences(in: element) }
        case .dictionary(let entries):
            for element in entries.values { try checkReferences(in: element) }
        default:
            break
        }
    }
}

/// Why a keyed archive could not be finished.
public enum KeyedArchiveWriterError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A UID was reserved but never set.
    case unsetReference(KeyedArchive.Reference)
    /// A UID was used that this writer never handed out.
    case unknownReference(KeyedArchive.Reference)
    /// A reserved UID was set twice.
    case alreadySet(KeyedArchive.Reference)
    /// Fields may not use a name the archive format reserves.
    case reservedField(String)
    /// A dictionary was given different numbers of keys and values.
    case countMismatch(keys: Int, values: Int)

    public var description: String {
        switch self {
        case .unsetReference(let ref): return "Object \(ref) was reserved but never set."
        case .unknownReference(let ref): return "Object \(ref) was never created by this writer."
        case .alreadySet(let ref): return "Object \(ref) was set twice."
        case .reservedField(let name): return "The field name \"\(name)\" is reserved by the archive format."
        case .countMismatch(let keys, let values):
            return "A dictionary was given \(keys) keys but \(values) values."
        }
    }
}
