import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import StoreFormats

/// Reads a Core Data XML store (`NSXMLStoreType`). The layout, from real `.storedata` files and
/// tests written against Apple's output found in public repositories:
///
///     <?xml version="1.0" standalone="yes"?>
///     <!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd">
///     <database>
///         <databaseInfo>
///             <version>134481920</version>
///             <UUID>…</UUID>
///             <nextObjectID>105</nextObjectID>
///             <metadata><plist version="1.0"><dict>…</dict></plist></metadata>
///         </databaseInfo>
///         <object type="EMPLOYEE" id="z102">
///             <attribute name="hiredate" type="date">445103622.25000000000000000000</attribute>
///             <relationship name="department" type="1/1" destination="DEPARTMENT" idrefs="z104"></relationship>
///         </object>
///     </database>
///
/// The store is evidence: the DOCTYPE's `file://` DTD is never fetched (external entities off,
/// and a prolog declaring a DTD subset or an entity is refused before the parser sees it, so no
/// entity is ever expanded), the file size, object count, properties per object, nesting and
/// each value's length are bounded.
public enum XMLStoreReader {
    public static func read(_ url: URL, displayPath: String, limits: AtomicStoreLimits = .standard) throws(AtomicStoreError) -> AtomicStoreContents {
        let data: Data
        do {
            data = try SmallFile.contents(of: url, limit: limits.maxFileBytes)
        } catch .tooLarge(let size, let limit) {
            throw .tooLarge(path: displayPath, what: "\(size) bytes", limit: limit)
        } catch {
            throw .unreadable(path: displayPath, detail: error.description)
        }
        return try parse(data, displayPath: displayPath, limits: limits)
    }

    public static func parse(_ data: Data, displayPath: String, limits: AtomicStoreLimits = .standard) throws(AtomicStoreError) -> AtomicStoreContents {
        try checkProlog(data, displayPath: displayPath)
        // Fed as a stream, in chunks: given the whole document at once, libxml2 stops at its
        // 10 MB look-up limit with an internal error, and a store is often larger.
        let parser = XMLParser(stream: InputStream(data: data))
        let delegate = XMLStoreParsing(displayPath: displayPath, limits: limits)
        parser.delegate = delegate
        parser.shouldResolveExternalEntities = false
        parser.shouldProcessNamespaces = false
        parser.shouldReportNamespacePrefixes = false
        let parsed = parser.parse()
        if let failure = delegate.failure { throw failure }
        guard parsed else {
            let detail = parser.parserError.map { ($0 as NSError).localizedDescription } ?? "the XML is not well-formed"
            throw .malformed(path: displayPath, line: parser.lineNumber > 0 ? parser.lineNumber : nil, detail: detail)
        }
        guard delegate.sawDatabase else { throw .malformed(path: displayPath, line: nil, detail: "no <database> element") }
        // FoundationXML can report success for a document cut off inside its root element.
        guard delegate.closedDatabase else {
            throw .malformed(path: displayPath, line: nil, detail: "the file ends before </database>, so it was cut off and would show part of the store")
        }
        var contents = delegate.contents
        let entities = Set(contents.objects.map { $0.type.uppercased() }).union(contents.modelVersionHashes.map { $0.entity.uppercased() })
        guard entities.count <= limits.maxEntities else {
            throw .tooLarge(path: displayPath, what: "\(entities.count) entities", limit: limits.maxEntities)
        }
        XMLStoreChecks.checkIdentities(&contents)
        return contents
    }

    /// A `<database` in the first 64 KiB (what tells a store from other XML), and nothing
    /// anywhere that declares or refers to an entity (`XMLDeclarations`): the XML declaration,
    /// comments and the DOCTYPE naming Core Data's DTD are all Core Data writes before it, and
    /// they leave libxml2 nothing to expand (billion laughs), fetch or `stat`.
    static func checkProlog(_ data: Data, displayPath: String) throws(AtomicStoreError) {
        let head = data.prefix(64 << 10)
        let text = String(decoding: head, as: UTF8.self)
        guard text.contains("<database") else {
            throw .malformed(path: displayPath, line: nil, detail: "no <database> element in its first 64 KiB")
        }
        if let problem = XMLDeclarations.problem(in: data, allowingDoctype: true) {
            throw .malformed(path: displayPath, line: nil, detail: problem)
        }
    }
}

/// The SAX delegate: builds `AtomicStoreContents` element by element, stopping the parser at
/// the first bound crossed.
final class XMLStoreParsing: NSObject, XMLParserDelegate {
    let displayPath: String
    let limits: AtomicStoreLimits
    var contents = AtomicStoreContents(format: .coreDataXML)
    var failure: AtomicStoreError?
    var sawDatabase = false
    var closedDatabase = false
    private var path: [String] = []
    private var text = ""
    private var collecting = false
    private var object: AtomicStoreObject?
    private var attribute: AtomicStoreObject.Attribute?
    private var metadata: PlistBuilder?

    init(displayPath: String, limits: AtomicStoreLimits) {
        self.displayPath = displayPath
        self.limits = limits
    }

    private func stop(_ parser: XMLParser, _ error: AtomicStoreError) {
        if failure == nil { failure = error }
        parser.abortParsing()
    }

    func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]) {
        guard failure == nil else { return }
        path.append(name)
        guard path.count <= limits.maxDepth else {
            return stop(parser, .tooLarge(path: displayPath, what: "elements nested more than \(limits.maxDepth) deep", limit: limits.maxDepth))
        }
        if let builder = metadata {
            builder.start(name)
            collecting = true
            text = ""
            return
        }
        switch (path.count, name) {
        case (1, "database"):
            sawDatabase = true
        case (1, _):
            stop(parser, .malformed(path: displayPath, line: parser.lineNumber, detail: "the root element is <\(name)>, not <database>"))
        case (3, "metadata") where path[1] == "databaseInfo":
            metadata = PlistBuilder()
        case (3, _) where path[1] == "databaseInfo":
            collecting = true
            text = ""
        case (2, "object"):
            startObject(parser, attributes)
        case (3, "attribute") where object != nil:
            attribute = .init(name: attributes["name"] ?? "", type: attributes["type"] ?? "", text: "")
            collecting = true
            text = ""
        case (3, "relationship") where object != nil:
            let idrefs = (attributes["idrefs"] ?? "").split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }).map(String.init)
            object!.relationships.append(.init(name: attributes["name"] ?? "", type: attributes["type"] ?? "",
                                               destination: attributes["destination"] ?? "", idrefs: idrefs))
            checkProperties(parser)
        default:
            break
        }
    }

    private func startObject(_ parser: XMLParser, _ attributes: [String: String]) {
        guard contents.objects.count < limits.maxObjects else {
            return stop(parser, .tooLarge(path: displayPath, what: "more than \(limits.maxObjects) objects", limit: limits.maxObjects))
        }
        let type = attributes["type"] ?? ""
        let id = attributes["id"] ?? ""
        if type.isEmpty || id.isEmpty {
            contents.note("line \(parser.lineNumber): an <object> without \(type.isEmpty ? "a type" : "an id"); listed under \(type.isEmpty ? "entity ?" : type)")
        }
        object = AtomicStoreObject(type: type.isEmpty ? "?" : type, id: id)
    }

    private func checkProperties(_ parser: XMLParser) {
        guard let object, object.attributes.count + object.relationships.count > limits.maxPropertiesPerObject else { return }
        stop(parser, .tooLarge(path: displayPath, what: "an object (\(object.id)) with more than \(limits.maxPropertiesPerObject) properties",
                               limit: limits.maxPropertiesPerObject))
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        guard collecting, failure == nil else { return }
        guard text.utf8.count + string.utf8.count <= limits.maxValueBytes else {
            return stop(parser, .tooLarge(path: displayPath, what: "a value longer than \(limits.maxValueBytes) bytes (line \(parser.lineNumber))",
                                          limit: limits.maxValueBytes))
        }
        text += string
    }

    func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
        guard failure == nil else { return }
        defer { path.removeLast() }
        if let builder = metadata {
            if path.count == 3 {
                contents.metadata = builder.dictionary
                metadata = nil
            } else {
                builder.end(name, text: text)
            }
            text = ""
            return
        }
        switch (path.count, name) {
        case (3, "version") where path[1] == "databaseInfo": contents.databaseVersion = text.trimmingCharacters(in: .whitespacesAndNewlines)
        case (3, "UUID") where path[1] == "databaseInfo": contents.databaseUUID = text.trimmingCharacters(in: .whitespacesAndNewlines)
        case (3, "nextObjectID") where path[1] == "databaseInfo": contents.nextObjectID = text.trimmingCharacters(in: .whitespacesAndNewlines)
        case (3, "attribute"):
            if var attribute, object != nil {
                attribute.text = text
                object!.attributes.append(attribute)
                checkProperties(parser)
            }
            attribute = nil
        case (2, "object"):
            if let object { contents.objects.append(object) }
            object = nil
        case (1, "database"):
            closedDatabase = true
        default:
            break
        }
        collecting = false
        text = ""
    }

    // Never called with external entities off and no DTD subset; refused all the same.
    func parser(_ parser: XMLParser, resolveExternalEntityName name: String, systemID: String?) -> Data? {
        stop(parser, .malformed(path: displayPath, line: parser.lineNumber, detail: "it refers to an external entity \(name), which storelens never reads"))
        return nil
    }

    func parser(_ parser: XMLParser, foundInternalEntityDeclarationWithName name: String, value: String?) {
        stop(parser, .malformed(path: displayPath, line: parser.lineNumber, detail: "it declares an entity \(name), which Core Data never writes"))
    }
}
