import Foundation

/// Writes a Core Data XML store (`NSXMLStoreType`) from a `ModelDescription`, in the layout of
/// the real `.storedata` files and the tests against Apple's output found in public
/// repositories: the CoreData.dtd DOCTYPE, `<databaseInfo>` with version 134481920, the store
/// UUID, `nextObjectID` and the metadata as an inline XML plist; one `<object>` per record with
/// the entity name in upper case and property names in lower case, ids `z<number>`, dates as
/// seconds since 2001-01-01 with 20 decimals, bytes as base64, relationships as `idrefs`
/// (`1/1` to-one, `0/0` to-many). What Apple writes for uuid, uri and decimal values is
/// inferred (their text form).
public struct XMLStoreWriter {
    public let model: ModelDescription
    public let storeUUID: UUID
    private var objects: [(entity: String, pk: Int, values: [String: BuilderValue])] = []
    private var links: [Int: [String: [Int]]] = [:]
    private var next = 100

    public init(model: ModelDescription, storeUUID: UUID = UUID()) {
        self.model = model
        self.storeUUID = storeUUID
    }

    /// Adds an object and returns its key (its id is `z<key>`). Keys are unique across entities,
    /// as Core Data's are in an XML store.
    @discardableResult
    public mutating func insert(_ entity: String, _ values: [String: BuilderValue] = [:]) -> Int {
        next += 1
        objects.append((entity, next, values))
        return next
    }

    /// Sets a to-many relationship of object `pk` to `targets` (keys of the destination's objects).
    public mutating func link(pk: Int, _ relationship: String, to targets: [Int]) {
        links[pk, default: [:]][relationship] = targets
    }

    public func write(to url: URL) throws {
        try Data(xml().utf8).write(to: url, options: .withoutOverwriting)
    }

    public func xml() -> String {
        var out = "<?xml version=\"1.0\" standalone=\"yes\"?>\n"
        out += "<!DOCTYPE database SYSTEM \"file:///System/Library/DTDs/CoreData.dtd\">\n\n<database>\n"
        out += "    <databaseInfo>\n        <version>134481920</version>\n"
        out += "        <UUID>\(storeUUID.uuidString)</UUID>\n        <nextObjectID>\(next + 1)</nextObjectID>\n"
        out += "        <metadata>\n" + metadataPlist() + "        </metadata>\n    </databaseInfo>\n"
        for object in objects { out += objectXML(object) }
        return out + "</database>\n"
    }

    private func metadataPlist() -> String {
        var out = "            <plist version=\"1.0\">\n                <dict>\n"
        out += "                    <key>NSPersistenceFrameworkVersion</key>\n                    <integer>1414</integer>\n"
        out += "                    <key>NSStoreModelVersionHashes</key>\n                    <dict>\n"
        for entity in model.entities.sorted(by: { $0.name < $1.name }) {
            out += "                        <key>\(Self.escaped(entity.name))</key>\n"
            out += "                        <data>\(Data(StoreWriter.versionHash(entity)).base64EncodedString())</data>\n"
        }
        out += "                    </dict>\n"
        out += "                    <key>NSStoreModelVersionHashesVersion</key>\n                    <integer>3</integer>\n"
        out += "                    <key>NSStoreType</key>\n                    <string>XML</string>\n"
        out += "                    <key>NSStoreUUID</key>\n                    <string>\(storeUUID.uuidString)</string>\n"
        return out + "                </dict>\n            </plist>\n"
    }

    /// The entity and its ancestors, root first: an object carries every inherited property.
    private func lineage(_ name: String) -> [EntityDescription] {
        var chain: [EntityDescription] = []
        var current = model.entity(name)
        while let entity = current, chain.count < 64 {
            chain.insert(entity, at: 0)
            current = entity.parent.flatMap(model.entity)
        }
        return chain
    }

    private func objectXML(_ object: (entity: String, pk: Int, values: [String: BuilderValue])) -> String {
        let chain = lineage(object.entity)
        var out = "    <object type=\"\(Self.escaped(object.entity.uppercased()))\" id=\"z\(object.pk)\">\n"
        for attribute in chain.flatMap(\.attributes) {
            guard let value = object.values[attribute.name], value != .null else { continue }
            out += "        <attribute name=\"\(Self.escaped(attribute.name.lowercased()))\" type=\"\(Self.typeName(attribute.type))\">"
            out += Self.escaped(Self.text(value, type: attribute.type)) + "</attribute>\n"
        }
        for relationship in chain.flatMap(\.relationships) {
            var targets: [Int] = []
            if relationship.isToMany {
                targets = links[object.pk]?[relationship.name] ?? []
            } else if case .object(_, let pk)? = object.values[relationship.name] {
                targets = [pk]
            }
            out += "        <relationship name=\"\(Self.escaped(relationship.name.lowercased()))\" type=\"\(relationship.isToMany ? "0/0" : "1/1")\" "
            out += "destination=\"\(Self.escaped(relationship.destination.uppercased()))\""
            if !targets.isEmpty { out += " idrefs=\"\(targets.map { "z\($0)" }.joined(separator: " "))\"" }
            out += "></relationship>\n"
        }
        return out + "    </object>\n"
    }

    /// Core Data's name for an attribute type in the `type` attribute.
    public static func typeName(_ type: AttributeType) -> String {
        switch type {
        case .integer16: return "int16"
        case .integer32: return "int32"
        case .integer64: return "int64"
        case .decimal: return "decimal"
        case .double: return "double"
        case .float: return "float"
        case .string: return "string"
        case .boolean: return "bool"
        case .date: return "date"
        case .binaryData: return "binary"
        case .uuid: return "uuid"
        case .uri: return "uri"
        case .transformable: return "transformable"
        case .objectID: return "objectID"
        case .composite: return "composite"
        }
    }

    static func text(_ value: BuilderValue, type: AttributeType) -> String {
        switch value {
        case .null: return ""
        case .int(let i): return type == .boolean ? (i != 0 ? "1" : "0") : String(i)
        case .double(let d): return type == .decimal ? "\(Decimal(d))" : String(d)
        case .string(let s): return s
        case .bool(let b): return b ? "1" : "0"
        case .date(let date): return String(format: "%.20f", date.timeIntervalSinceReferenceDate)
        case .data(let data): return data.base64EncodedString()
        case .uuid(let uuid): return uuid.uuidString
        case .object(_, let pk): return "z\(pk)"
        }
    }

    /// Text and attribute values escaped for XML; a carriage return as a character reference, so
    /// the parser gives it back (XML would turn it into a newline).
    static func escaped(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for c in text.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "\r": out += "&#13;"
            default: out.unicodeScalars.append(c)
            }
        }
        return out
    }
}

extension XMLStoreWriter {
    /// A model with every attribute type an XML store writes, a to-one and a to-many
    /// relationship (with its inverse) and a subentity.
    public static let sampleModel = ModelDescription(entities: [
        EntityDescription("Library",
                          attributes: [AttributeDescription("name", .string, optional: false),
                                       AttributeDescription("founded", .date),
                                       AttributeDescription("rating", .double),
                                       AttributeDescription("isOpen", .boolean),
                                       AttributeDescription("code", .uuid),
                                       AttributeDescription("website", .uri),
                                       AttributeDescription("shelves", .integer16)],
                          relationships: [RelationshipDescription("books", to: "Book", inverse: "library", toMany: true)]),
        EntityDescription("Book",
                          attributes: [AttributeDescription("title", .string, optional: false),
                                       AttributeDescription("pages", .integer32),
                                       AttributeDescription("isbn", .integer64),
                                       AttributeDescription("price", .decimal),
                                       AttributeDescription("weight", .float),
                                       AttributeDescription("cover", .binaryData),
                                       AttributeDescription("extra", .transformable)],
                          relationships: [RelationshipDescription("library", to: "Library", inverse: "books")]),
        EntityDescription("Ebook", parent: "Book",
                          attributes: [AttributeDescription("fileSize", .integer64)]),
    ], versionIdentifiers: ["1.0.0"])

    /// An XML store of `sampleModel`: `libraries` libraries with `booksPerLibrary` books each
    /// (every third an Ebook), values varied enough to hold markup characters, non-ASCII text, a
    /// carriage return, negative numbers and dates before 2001.
    public static func sample(libraries: Int = 3, booksPerLibrary: Int = 4) -> XMLStoreWriter {
        var writer = XMLStoreWriter(model: sampleModel)
        for l in 0..<libraries {
            let library = writer.insert("Library", [
                "name": .string(l == 0 ? "Tom & Jerry's <Library>" : "Bibliothèque \(l)\r\nzweite Zeile"),
                "founded": .date(Date(timeIntervalSinceReferenceDate: Double(l) * 1e8 - 3e8 + 0.25)),
                "rating": .double(Double(l) * 1.5 - 0.125),
                "isOpen": .bool(l % 2 == 0),
                "code": .uuid(UUID(uuidString: String(format: "%08X-0000-4000-8000-%012X", l + 1, l * 7919))!),
                "website": .string("https://example.com/library?id=\(l)&x=\"y\""),
                "shelves": .int(Int64(l * 10 - 5)),
            ])
            var books: [Int] = []
            for b in 0..<booksPerLibrary {
                let isEbook = b % 3 == 2
                var values: [String: BuilderValue] = [
                    "title": .string("Book \(l)-\(b) ✓"),
                    "pages": .int(Int64(100 + b * 37)),
                    "isbn": .int(9_780_000_000_000 + Int64(l * 1000 + b)),
                    "price": .double(Double(b) * 2.5 + 0.99),
                    "weight": .double(Double(b) / 4),
                    "cover": .data(Data((0..<(b * 5 + 1)).map { UInt8(($0 * 31 + l) % 256) })),
                    "extra": .data(Data("plist-\(b)".utf8)),
                    "library": .object(entity: "Library", pk: library),
                ]
                if isEbook { values["fileSize"] = .int(Int64(b) << 20) }
                books.append(writer.insert(isEbook ? "Ebook" : "Book", values))
            }
            writer.link(pk: library, "books", to: books)
        }
        return writer
    }
}
