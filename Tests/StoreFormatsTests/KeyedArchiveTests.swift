import Foundation
import StoreTestSupport
import Testing
@testable import StoreFormats

/// Written by Python's plistlib with hand-placed UIDs: a one-entity model in the shape of a
/// Core Data model cache (NSManagedObjectModel → NSKnownKeysDictionary1 → NSEntityDescription
/// → NSMutableDictionary of NSAttributeDescriptions, NSUUID default, entity ↔ model cycle).
/// Made-up names and values; not from any real store.
private let pythonArchiveVector = """
YnBsaXN0MDDUAQIDBAUGbG5ZJGFyY2hpdmVyWCRvYmplY3RzVCR0b3BYJHZlcnNpb25fEA9OU0tleWVkQXJjaGl2ZXKvEBcHCA8ZHiMkKi4vMjtERUZQVFhb\
X2NmalUkbnVsbNMJCgsMDQ5WJGNsYXNzWk5TRW50aXRpZXNfEBdOU0ZldGNoUmVxdWVzdFRlbXBsYXRlc4AWgAKAANUJEBESExQVFhcYWmVtcHR5VG9rZW5d\
c2VhcmNoTWFwcGluZ1Z2YWx1ZXNXdmVyc2lvboAVgAiAA4AJEAHUCRobExwdGBhUa2V5c1ZsZW5ndGiAB4AE0gkfICFaTlMub2JqZWN0c4AGoSKABVROb3Rl\
0iUmJyhYJGNsYXNzZXNaJGNsYXNzbmFtZaIoKVdOU0FycmF5WE5TT2JqZWN00iUmKyyjLC0pXxAbTlNLbm93bktleXNNYXBwaW5nU3RyYXRlZ3kxXxAaTlNL\
bm93bktleXNNYXBwaW5nU3RyYXRlZ3lfEChfX2VtcHR5X3Nsb3RfdG9rZW5fNGMyNF85OGRjX2FjMWVfYjc3M19f0gkfIDChMYAK1QkzNDU2NyI4OTpcTlNF\
bnRpdHlOYW1lXxAUTlNNYW5hZ2VkT2JqZWN0TW9kZWxcTlNQcm9wZXJ0aWVzXU5TU3VwZXJlbnRpdHmAFIABgAuAANMJPB89PkFXTlMua2V5c4AQoj9AgAyA\
DaJCQ4AOgA9SaWRVdGl0bGXWCUdISUpLTE1OMU8/XxAPTlNBdHRyaWJ1dGVUeXBlXk5TRGVmYXVsdFZhbHVlWE5TRW50aXR5XE5TSXNPcHRpb25hbF5OU1By\
b3BlcnR5TmFtZYATEQRMgBII1glHSElKS0xRUjFTQBECvIAACdIlJlVWo1ZXKV8QE05TTXV0YWJsZURpY3Rpb25hcnlcTlNEaWN0aW9uYXJ50iUmWVqiWilW\
TlNVVUlE0glcXV5cTlMudXVpZGJ5dGVzgBFPEBAAAQIDBAUGBwgJCgsMDQ4P0iUmYGGjYWIpXxAWTlNBdHRyaWJ1dGVEZXNjcmlwdGlvbl8QFU5TUHJvcGVy\
dHlEZXNjcmlwdGlvbtIlJmRlomUpXxATTlNFbnRpdHlEZXNjcmlwdGlvbtIlJmdopWhpVlcpXxAWTlNLbm93bktleXNEaWN0aW9uYXJ5MV8QFU5TS25vd25L\
ZXlzRGljdGlvbmFyedIlJms0ojQp0W04VHJvb3QSAAGGoAAIABEAGwAkACkAMgBEAF4AZABrAHIAfQCXAJkAmwCdAKgAswDBAMgA0ADSANQA1gDYANoA4wDo\
AO8A8QDzAPgBAwEFAQcBCQEOARMBHAEnASoBMgE7AUABRAFiAX8BqgGvAbEBswG+AcsB4gHvAf0B/wIBAgMCBQIMAhQCFgIZAhsCHQIgAiICJAInAi0COgJM\
AlsCZAJxAoACggKFAocCiAKVApgCmgKbAqACpAK6AscCzALPAtYC2wLoAuoC/QMCAwYDHwM3AzwDPwNVA1oDYAN5A5EDlgOZA5wDoQAAAAAAAAIBAAAAAAAA\
AG8AAAAAAAAAAAAAAAAAAAOm
"""

/// A keyed archive plist with the given `$objects`, `$top.root` = `root`.
private func archivePlist(_ objects: [PlistValue], root: UInt64 = 1) -> PlistValue {
    .dictionary([
        "$archiver": .string("NSKeyedArchiver"),
        "$version": .integer(100_000),
        "$top": .dictionary(["root": .uid(root)]),
        "$objects": .array(objects),
    ])
}

private func classDescription(_ chain: [String]) -> PlistValue {
    .dictionary(["$classname": .string(chain[0]), "$classes": .array(chain.map(PlistValue.string))])
}

@Suite struct KeyedArchiveReadingTests {
    @Test func walksModelShapedArchiveWrittenByPython() throws {
        let archive = try KeyedArchive(data: try decodeBase64Vector(pythonArchiveVector))
        #expect(archive.archiver == "NSKeyedArchiver")
        #expect(archive.version == 100_000)
        let root = try archive.root
        let model = try #require(try archive.object(root))
        #expect(model.className == "NSManagedObjectModel")
        #expect(model.classes == ["NSManagedObjectModel", "NSObject"])
        #expect(try archive.reference("NSFetchRequestTemplates", in: model) == nil)  // $null

        let entitiesRef = try #require(try archive.reference("NSEntities", in: model))
        let entitiesObject = try #require(try archive.object(entitiesRef))
        #expect(entitiesObject.className == "NSKnownKeysDictionary1")
        let entities = try #require(try archive.stringKeyedDictionary(entitiesRef))
        #expect(entities.map(\.key) == ["Note"])

        let entity = try #require(try archive.object(entities[0].value))
        #expect(entity.className == "NSEntityDescription")
        // The cycle entity → model is just another reference.
        #expect(try archive.reference("NSManagedObjectModel", in: entity) == root)
        #expect(try archive.reference("NSSuperentity", in: entity) == nil)

        let propertiesRef = try #require(try archive.reference("NSProperties", in: entity))
        let properties = try #require(try archive.stringKeyedDictionary(propertiesRef))
        #expect(properties.map(\.key) == ["id", "title"])
        let id = try #require(try archive.object(properties[0].value))
        #expect(id.className == "NSAttributeDescription")
        #expect(id.isKind(of: "NSPropertyDescription"))
        #expect(id.int("NSAttributeType") == 1100)
        #expect(id.bool("NSIsOptional") == false)
        let defaultRef = try #require(try archive.reference("NSDefaultValue", in: id))
        let defaultUUID = try archive.uuid(defaultRef)
        #expect(defaultUUID == UUID(uuidString: "00010203-0405-0607-0809-0A0B0C0D0E0F"))
        let title = try #require(try archive.object(properties[1].value))
        #expect(try archive.reference("NSDefaultValue", in: title) == nil)
        #expect(title.int("NSAttributeType") == 700)
    }

    @Test func nullReadsAsNilEverywhere() throws {
        let archive = try KeyedArchive(plist: archivePlist([.string("$null"), .string("x")]))
        let null = KeyedArchive.Reference.null
        #expect(try archive.object(null) == nil)
        #expect(try archive.string(null) == nil)
        #expect(try archive.int(null) == nil)
        #expect(try archive.bool(null) == nil)
        #expect(try archive.data(null) == nil)
        #expect(try archive.uuid(null) == nil)
        #expect(try archive.date(null) == nil)
        #expect(try archive.array(null) == nil)
        #expect(try archive.dictionary(null) == nil)
        #expect(try archive.json(null) == .string("$null"))
    }

    @Test func readsFoundationValueObjects() throws {
        let objects: [PlistValue] = [
            .string("$null"),
            .dictionary(["$class": .uid(2), "NS.string": .string("mutable")]),  // 1
            classDescription(["NSMutableString", "NSString", "NSObject"]),  // 2
            .dictionary(["$class": .uid(4), "NS.time": .real(86_400)]),  // 3
            classDescription(["NSDate", "NSObject"]),  // 4
            .dictionary(["$class": .uid(6), "NS.data": .data(Data([9, 8]))]),  // 5
            classDescription(["NSMutableData", "NSData", "NSObject"]),  // 6
            .integer(42),  // 7
            .bool(true),  // 8
            .real(2.5),  // 9
            .dictionary(["$class": .uid(11), "NS.objects": .array([.uid(7), .uid(8)])]),  // 10
            classDescription(["NSMutableSet", "NSSet", "NSObject"]),  // 11
        ]
        let archive = try KeyedArchive(plist: archivePlist(objects))
        func ref(_ uid: UInt64) -> KeyedArchive.Reference { .init(uid: uid) }
        #expect(try archive.string(ref(1)) == "mutable")
        #expect(try archive.date(ref(3)) == Date(timeIntervalSinceReferenceDate: 86_400))
        #expect(try archive.data(ref(5)) == Data([9, 8]))
        #expect(try archive.int(ref(7)) == 42)
        #expect(try archive.bool(ref(8)) == true)
        #expect(try archive.double(ref(9)) == 2.5)
        #expect(try archive.array(ref(10)) == [ref(7), ref(8)])
        #expect(try archive.json(ref(10)) == .array([.integer(42), .bool(true)]))
    }

    @Test func rendersFoundationArchiveAsTree() throws {
        let writer = KeyedArchiveWriter()
        let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!
        let keys = ["name", "when", "tags", "id", "count", "blob"].map { writer.string($0) }
        let values = [
            writer.string("Item"),
            writer.date(Date(timeIntervalSinceReferenceDate: 10)),
            writer.set(members: [writer.string("a"), writer.string("b")]),
            writer.uuid(uuid),
            writer.int(3),
            writer.data(Data([0xFF])),
        ]
        let root = writer.dictionary(keys: keys, values: values)
        let archive = try KeyedArchive(data: try writer.finish(root: root))
        #expect(try archive.json(try archive.root) == .dictionary([
            "name": .string("Item"),
            "when": .date(10),
            "tags": .array([.string("a"), .string("b")]),
            "id": .string(uuid.uuidString),
            "count": .integer(3),
            "blob": .data(Data([0xFF])),
        ]))
    }
}

@Suite struct KeyedArchiveHostileInputTests {
    @Test func rejectsArchivesWithoutTheRequiredParts() {
        #expect(throws: KeyedArchiveError.notKeyedArchive) { try KeyedArchive(plist: .array([])) }
        #expect(throws: KeyedArchiveError.missingArchiver) {
            try KeyedArchive(plist: .dictionary(["$objects": .array([.string("$null")])]))
        }
        #expect(throws: KeyedArchiveError.unsupportedArchiver("NSArchiver")) {
            try KeyedArchive(plist: .dictionary(["$archiver": .string("NSArchiver")]))
        }
        var plist = archivePlist([.string("$null")], root: 0)
        if case .dictionary(var entries) = plist {
            entries["$objects"] = .dictionary([:])
            plist = .dictionary(entries)
        }
        #expect(throws: KeyedArchiveError.objectsNotArray) { try KeyedArchive(plist: plist) }
        #expect(throws: KeyedArchiveError.objectsNotArray) { try KeyedArchive(plist: archivePlist([], root: 0)) }
        #expect(throws: KeyedArchiveError.missingTop) {
            try KeyedArchive(plist: .dictionary([
                "$archiver": .string("NSKeyedArchiver"), "$objects": .array([.string("$null")]),
            ]))
        }
        #expect(throws: KeyedArchiveError.notAReference(key: "root")) {
            try KeyedArchive(plist: .dictionary([
                "$archiver": .string("NSKeyedArchiver"), "$objects": .array([.string("$null")]),
                "$top": .dictionary(["root": .integer(0)]),
            ]))
        }
    }

    @Test func rejectsBytesThatAreNotAPlist() {
        #expect(throws: KeyedArchiveError.plist(.notBinaryPlist)) { try KeyedArchive(data: Data("nope".utf8)) }
    }

    @Test func missingTopKeyIsAnError() throws {
        let archive = try KeyedArchive(plist: archivePlist([.string("$null"), .string("x")]))
        #expect(throws: KeyedArchiveError.missingTopKey("other")) { try archive.top("other") }
    }

    @Test func rejectsOutOfRangeUIDs() throws {
        #expect(throws: KeyedArchiveError.uidOutOfRange(7, objectCount: 2)) {
            try KeyedArchive(plist: archivePlist([.string("$null"), .string("x")], root: 7))
        }
        let objects: [PlistValue] = [
            .string("$null"),
            .dictionary(["$class": .uid(2), "NS.objects": .array([.uid(99)]), "other": .uid(1_000)]),
            classDescription(["NSArray", "NSObject"]),
            .dictionary(["$class": .uid(500)]),
        ]
        let archive = try KeyedArchive(plist: archivePlist(objects))
        let root = try archive.root
        #expect(throws: KeyedArchiveError.uidOutOfRange(99, objectCount: 4)) { try archive.array(root) }
        #expect(throws: KeyedArchiveError.uidOutOfRange(1_000, objectCount: 4)) {
            try archive.reference("other", of: root)
        }
        #expect(throws: KeyedArchiveError.uidOutOfRange(500, objectCount: 4)) {
            try archive.object(.init(uid: 3))
        }
        #expect(throws: KeyedArchiveError.uidOutOfRange(UInt64.max, objectCount: 4)) {
            try archive.object(.init(uid: UInt64.max))
        }
    }

    @Test func rejectsMalformedClassesAndCollections() throws {
        let objects: [PlistValue] = [
            .string("$null"),
            .dictionary(["$class": .string("NSArray")]),  // 1: $class not a UID
            .dictionary(["$class": .uid(4), "NS.keys": .array([.uid(4)]), "NS.objects": .array([])]),  // 2: count mismatch
            .dictionary(["$class": .uid(1)]),  // 3: class object without $classname
            classDescription(["NSDictionary", "NSObject"]),  // 4
        ]
        let archive = try KeyedArchive(plist: archivePlist(objects))
        #expect(throws: KeyedArchiveError.malformedClass(.init(uid: 1))) { try archive.object(.init(uid: 1)) }
        #expect(throws: KeyedArchiveError.malformedClass(.init(uid: 3))) { try archive.object(.init(uid: 3)) }
        #expect(throws: KeyedArchiveError.malformedCollection(.init(uid: 2))) { try archive.dictionary(.init(uid: 2)) }
        #expect(throws: KeyedArchiveError.typeMismatch(.init(uid: 2), expected: "NSArray or NSSet", found: "NSDictionary")) {
            try archive.array(.init(uid: 2))
        }
        #expect(throws: KeyedArchiveError.typeMismatch(.init(uid: 2), expected: "string", found: "NSDictionary")) {
            try archive.string(.init(uid: 2))
        }
    }

    @Test func cyclicDictionariesAreWalkableButNotRenderable() throws {
        // 1: NSMutableDictionary {"self": 1, "other": 3}; 3: NSArray [1]
        let objects: [PlistValue] = [
            .string("$null"),
            .dictionary(["$class": .uid(2), "NS.keys": .array([.uid(4), .uid(5)]), "NS.objects": .array([.uid(1), .uid(3)])]),
            classDescription(["NSMutableDictionary", "NSDictionary", "NSObject"]),
            .dictionary(["$class": .uid(6), "NS.objects": .array([.uid(1)])]),
            .string("self"),
            .string("other"),
            classDescription(["NSArray", "NSObject"]),
        ]
        let archive = try KeyedArchive(plist: archivePlist(objects))
        let root = try archive.root
        let entries = try #require(try archive.stringKeyedDictionary(root))
        #expect(entries.map(\.key) == ["self", "other"])
        #expect(entries[0].value == root)
        #expect(throws: KeyedArchiveError.cycle(root)) { try archive.json(root) }
    }

    @Test func renderingIsBoundedInDepthAndSize() throws {
        // 200 nested NSArrays, no cycle.
        var objects: [PlistValue] = [.string("$null"), classDescription(["NSArray", "NSObject"])]
        for index in 0..<200 {
            let next: [PlistValue] = index == 199 ? [] : [.uid(UInt64(objects.count + 1))]
            objects.append(.dictionary(["$class": .uid(1), "NS.objects": .array(next)]))
        }
        let archive = try KeyedArchive(plist: archivePlist(objects, root: 2))
        #expect(throws: KeyedArchiveError.tooDeep) { try archive.json(try archive.root) }
        #expect(throws: Never.self) { try archive.json(try archive.root, depthLimit: 300) }

        // An array whose 1,000 members are all the same 1,000-member array: a million values.
        let wide: [PlistValue] = [
            .string("$null"), classDescription(["NSArray", "NSObject"]),
            .dictionary(["$class": .uid(1), "NS.objects": .array(Array(repeating: .uid(3), count: 1_000))]),
            .dictionary(["$class": .uid(1), "NS.objects": .array(Array(repeating: .uid(4), count: 1_000))]),
            .integer(0),
        ]
        let widening = try KeyedArchive(plist: archivePlist(wide, root: 2))
        #expect(throws: KeyedArchiveError.tooLarge) { try widening.json(try widening.root) }
    }

    @Test func survivesRandomMutationsOfAnArchive() throws {
        let seed = [UInt8](try decodeBase64Vector(pythonArchiveVector))
        var random = SeededRandom(seed: 0xA4C_41FE)
        for _ in 0..<1_500 {
            var bytes = seed
            for _ in 0..<(1 + random.next() % 6) {
                bytes[Int(random.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: random.next())
            }
            guard let archive = try? KeyedArchive(data: Data(bytes)) else { continue }
            // Walk everything reachable the way a reader would; errors are fine, crashes are not.
            for index in 0..<archive.objects.count {
                let ref = KeyedArchive.Reference(uid: UInt64(index))
                _ = try? archive.object(ref)
                _ = try? archive.dictionary(ref)
                _ = try? archive.array(ref)
                _ = try? archive.string(ref)
                _ = try? archive.uuid(ref)
                _ = try? archive.json(ref, depthLimit: 32, maxValues: 10_000)
            }
        }
    }
}

@Suite struct KeyedArchiveWriterTests {
    /// Builds a two-entity model graph the way the store builder will: cyclic, with reserved UIDs.
    private func buildModel() throws -> (Data, UUID) {
        let writer = KeyedArchiveWriter()
        let model = writer.reserve()
        let author = writer.reserve()
        let book = writer.reserve()
        let books = writer.reserve()  // Author.books ↔ Book.author
        let bookAuthor = writer.reserve()
        let idDefault = UUID(uuidString: "1B9FD00D-CB92-46CD-8711-5297025B7822")!

        let id = writer.object(className: "NSAttributeDescription", fields: [
            "NSPropertyName": writer.string("id").plistValue,
            "NSRenamingIdentifier": writer.string("id").plistValue,
            "NSAttributeType": .integer(1100),
            "NSAttributeValueClassName": writer.string("NSUUID").plistValue,
            "NSDefaultValue": writer.uuid(idDefault).plistValue,
            "NSEntity": author.plistValue,
            "NSValueTransformerName": KeyedArchive.Reference.null.plistValue,
            "_P": .integer(241),
        ])
        writer.set(books, className: "NSRelationshipDescription", fields: [
            "NSPropertyName": writer.string("books").plistValue,
            "NSEntity": author.plistValue,
            "NSDestinationEntity": book.plistValue,
            "NSInverseRelationship": bookAuthor.plistValue,
            "_NSDestinationEntityName": writer.string("Book").plistValue,
            "NSMinCount": .integer(0), "NSMaxCount": .integer(0), "NSDeleteRule": .integer(2),
        ])
        writer.set(bookAuthor, className: "NSRelationshipDescription", fields: [
            "NSPropertyName": writer.string("author").plistValue,
            "NSEntity": book.plistValue,
            "NSDestinationEntity": author.plistValue,
            "NSInverseRelationship": books.plistValue,
            "_NSDestinationEntityName": writer.string("Author").plistValue,
            "NSMinCount": .integer(0), "NSMaxCount": .integer(1), "NSDeleteRule": .integer(1),
            "NSIsOptional": .bool(true),
        ])
        let uniqueName = writer.array([writer.array([writer.string("id")], className: "NSMutableArray")],
                                      className: "NSMutableArray")
        for (entity, name, properties) in [(author, "Author", [("id", id), ("books", books)]),
                                           (book, "Book", [("author", bookAuthor)])] {
            writer.set(entity, className: "NSEntityDescription", fields: [
                "NSEntityName": writer.string(name).plistValue,
                "NSClassNameForEntity": writer.string(name, interned: false).plistValue,
                "NSManagedObjectModel": model.plistValue,
                "NSSuperentity": KeyedArchive.Reference.null.plistValue,
                "NSProperties": writer.mutableDictionary(keys: properties.map { writer.string($0.0) },
                                                         values: properties.map(\.1)).plistValue,
                "NSUniqueTuples": uniqueName.plistValue,
            ])
        }
        writer.set(model, className: "NSManagedObjectModel", fields: [
            "NSEntities": writer.knownKeysDictionary(keys: [writer.string("Author"), writer.string("Book")],
                                                     values: [author, book]).plistValue,
            "NSVersionIdentifiers": writer.set(members: [writer.string("1.0.0")]).plistValue,
            "NSFetchRequestTemplates": KeyedArchive.Reference.null.plistValue,
        ])
        return (try writer.finish(root: model), idDefault)
    }

    @Test func writtenModelReadsBackThroughKeyedArchive() throws {
        let (data, idDefault) = try buildModel()
        let archive = try KeyedArchive(data: data)
        #expect(archive.objects.first == .string("$null"))
        #expect(archive.version == 100_000)
        let root = try archive.root
        #expect(try archive.object(root)?.className == "NSManagedObjectModel")
        let entitiesRef = try #require(try archive.reference("NSEntities", of: root))
        let entities = try #require(try archive.stringKeyedDictionary(entitiesRef))
        #expect(entities.map(\.key) == ["Author", "Book"])

        let author = try #require(try archive.object(entities[0].value))
        #expect(try archive.reference("NSManagedObjectModel", in: author) == root)
        let uniqueTuplesRef = try #require(try archive.reference("NSUniqueTuples", in: author))
        let uniqueTuples = try archive.json(uniqueTuplesRef)
        #expect(uniqueTuples == .array([.array([.string("id")])]))
        let propertiesRef = try #require(try archive.reference("NSProperties", in: author))
        let properties = try #require(try archive.stringKeyedDictionary(propertiesRef))
        #expect(properties.map(\.key) == ["id", "books"])
        let id = try #require(try archive.object(properties[0].value))
        #expect(id.int("NSAttributeType") == 1100)
        let idDefaultRef = try #require(try archive.reference("NSDefaultValue", in: id))
        #expect(try archive.uuid(idDefaultRef) == idDefault)

        // Relationship ↔ inverse cycle.
        let books = properties[1].value
        let inverse = try #require(try archive.reference("NSInverseRelationship", of: books))
        #expect(try archive.reference("NSInverseRelationship", of: inverse) == books)
        #expect(try archive.object(inverse)?.bool("NSIsOptional") == true)
        // Fields render in key order, so the entity's NSManagedObjectModel leads back to the root first.
        #expect(throws: KeyedArchiveError.cycle(root)) { try archive.json(root) }

        let versions = try #require(try archive.reference("NSVersionIdentifiers", of: root))
        #expect(try archive.object(versions)?.className == "NSSet")
        #expect(try archive.json(versions) == .array([.string("1.0.0")]))
    }

    @Test func knownKeysDictionaryHasApplesLayout() throws {
        let writer = KeyedArchiveWriter()
        let dictionary = writer.knownKeysDictionary(keys: [writer.string("k")], values: [writer.int(1)])
        let archive = try KeyedArchive(data: try writer.finish(root: dictionary))
        let object = try #require(try archive.object(try archive.root))
        #expect(object.className == "NSKnownKeysDictionary1")
        #expect(object.classes == ["NSKnownKeysDictionary1", "NSKnownKeysDictionary", "NSMutableDictionary",
                                   "NSDictionary", "NSObject"])
        #expect(Set(object.fields.keys) == ["values", "searchMapping", "emptyToken", "version"])
        #expect(object.int("version") == 1)
        let token = try #require(try archive.reference("emptyToken", in: object))
        #expect(try archive.string(token) == "__empty_slot_token_4c24_98dc_ac1e_b773__")
        let mappingRef = try #require(try archive.reference("searchMapping", in: object))
        let mapping = try #require(try archive.object(mappingRef))
        #expect(mapping.className == "NSKnownKeysMappingStrategy1")
        #expect(mapping.classes == ["NSKnownKeysMappingStrategy1", "NSKnownKeysMappingStrategy", "NSObject"])
        #expect(Set(mapping.fields.keys) == ["keys", "length", "version"])
        #expect(mapping.int("length") == 1)
        let keysRef = try #require(try archive.reference("keys", in: mapping))
        let valuesRef = try #require(try archive.reference("values", in: object))
        #expect(try archive.object(keysRef)?.className == "NSArray")
        #expect(try archive.object(valuesRef)?.className == "NSArray")
    }

    @Test func knownKeysEmptySlotsAreSkipped() throws {
        let writer = KeyedArchiveWriter()
        let token = writer.string(KeyedArchiveWriter.knownKeysEmptyToken)
        let dictionary = writer.knownKeysDictionary(keys: [writer.string("a"), writer.string("b")],
                                                    values: [writer.int(1), token])
        let archive = try KeyedArchive(data: try writer.finish(root: dictionary))
        #expect(try archive.stringKeyedDictionary(try archive.root)?.map(\.key) == ["a"])
    }

    @Test func internsStringsNumbersAndClasses() throws {
        let writer = KeyedArchiveWriter()
        #expect(writer.string("x") == writer.string("x"))
        #expect(writer.string("x", interned: false) != writer.string("x"))
        #expect(writer.int(1) == writer.int(1))
        #expect(writer.int(1) != writer.bool(true))
        let first = writer.array([])
        let second = writer.array([])
        #expect(first != second)
        let plist = try writer.plist(root: first)
        let classEntries = (plist["$objects"]?.arrayValue ?? []).filter { $0["$classname"] != nil }
        #expect(classEntries == [classDescription(["NSArray", "NSObject"])])
    }

    @Test func foundationParsesTheArchiveBytes() throws {
        let (data, _) = try buildModel()
        var format = PropertyListSerialization.PropertyListFormat.xml
        let object = try PropertyListSerialization.propertyList(from: data, options: [], format: &format)
        #expect(format == .binary)
        let dictionary = try #require(object as? [String: Any])
        #expect(dictionary["$archiver"] as? String == "NSKeyedArchiver")
        #expect((dictionary["$version"] as? NSNumber)?.intValue == 100_000)
        let objects = try #require(dictionary["$objects"] as? [Any])
        #expect(objects.first as? String == "$null")
        #expect(dictionary["$top"] is [String: Any])
    }

    @Test func foundationUnarchivesWhatTheWriterWrites() throws {
        // A Foundation-only graph, to show the layout matches NSKeyedArchiver's.
        let writer = KeyedArchiveWriter()
        let root = writer.mutableDictionary(
            keys: [writer.string("name"), writer.string("tags")],
            values: [writer.string("Item"), writer.array([writer.string("a"), writer.string("b")])])
        let data = try writer.finish(root: root)
        let object = try NSKeyedUnarchiver.unarchivedObject(
            ofClasses: [NSDictionary.self, NSArray.self, NSString.self], from: data)
        let dictionary = try #require(object as? [String: Any])
        #expect(dictionary["name"] as? String == "Item")
        #expect(dictionary["tags"] as? [String] == ["a", "b"])
    }

    @Test func reportsBuildingMistakesAtFinish() {
        let unset = KeyedArchiveWriter()
        let reserved = unset.reserve()
        #expect(throws: KeyedArchiveWriterError.unsetReference(reserved)) { try unset.finish(root: reserved) }

        let twice = KeyedArchiveWriter()
        let ref = twice.reserve()
        twice.set(ref, className: "NSObject", fields: [:])
        twice.set(ref, className: "NSObject", fields: [:])
        #expect(throws: KeyedArchiveWriterError.alreadySet(ref)) { try twice.finish(root: ref) }

        let dangling = KeyedArchiveWriter()
        let bad = KeyedArchive.Reference(uid: 42)
        let holder = dangling.array([bad])
        #expect(throws: KeyedArchiveWriterError.unknownReference(bad)) { try dangling.finish(root: holder) }
        #expect(throws: KeyedArchiveWriterError.unknownReference(bad)) { try KeyedArchiveWriter().finish(root: bad) }

        let mismatch = KeyedArchiveWriter()
        let dictionary = mismatch.mutableDictionary(keys: [mismatch.string("k")], values: [])
        #expect(throws: KeyedArchiveWriterError.countMismatch(keys: 1, values: 0)) {
            try mismatch.finish(root: dictionary)
        }
    }
}
