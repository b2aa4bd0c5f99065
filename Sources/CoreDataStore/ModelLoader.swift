import Acquisition
import Foundation
import SQLiteAccess

/// Chooses the model for a store: the cached model first, then an Xcode model given with
/// `--model`, then one inferred from the SQL schema. When the cache and `--model` both exist,
/// the cache wins and every difference is listed in `disagreements`.
public enum ModelLoader {
    public static func load(connection: Connection, store: CoreDataStore, xcodeModel: URL? = nil) throws -> StoreModel {
        var model = try loadAppModel(connection: connection, store: store, xcodeModel: xcodeModel)
        try addCloudKitEntities(to: &model, connection: connection, store: store)
        return model
    }

    /// NSPersistentCloudKitContainer's own entities (`NSCK…`, numbered from 17001, tables `ANSCK…`)
    /// are not in the app's model: they come from Core Data's private mirroring model. So that
    /// `rows`, `schema` and `check` can read them, each gets an entity whose attributes are its
    /// table's columns, typed by their declared SQL type and named after them (`ZCKRECORDNAME` →
    /// `ckrecordname`), marked in the model's notes.
    static func addCloudKitEntities(to model: inout StoreModel, connection: Connection, store: CoreDataStore) throws {
        let known = Set(model.entities.map(\.name))
        var added: [String] = []
        for e in store.entities where e.kind == .cloudKit && e.tableExists && !known.contains(e.name) {
            var entity = ModelEntity(name: e.name, className: e.name, parent: e.parentName)
            // Only the root's table holds the columns; subentities share it and add none of their own.
            if e.superNumber == 0 {
                for column in try connection.columns(of: e.table) where !["Z_PK", "Z_ENT", "Z_OPT"].contains(column.name.uppercased()) {
                    guard column.name.uppercased().hasPrefix("Z") else { continue }
                    var attribute = ModelAttribute(name: InferredModelBuilder.Builder.lower(column.name), type: Self.type(declared: column.declaredType))
                    attribute.columnHint = column.name
                    entity.attributes.append(attribute)
                }
            }
            entity.attributes.sort { $0.name < $1.name }
            model.entities.append(entity)
            added.append(e.name)
        }
        if !added.isEmpty {
            model.notes.append("CloudKit mirroring entities (\(added.count): \(added.prefix(6).joined(separator: ", "))\(added.count > 6 ? ", …" : "")) are read from their ANSCK tables' columns; Core Data's private mirroring model is not in the store")
        }
    }

    static func type(declared: String) -> ModelAttributeType {
        switch declared.uppercased() {
        case "INTEGER": return .integer64
        case "FLOAT", "REAL", "DOUBLE": return .double
        case "TIMESTAMP": return .date
        case "VARCHAR", "TEXT": return .string
        case "DECIMAL": return .decimal
        default: return .binary
        }
    }

    static func loadAppModel(connection: Connection, store: CoreDataStore, xcodeModel: URL?) throws -> StoreModel {
        var notes: [String] = []
        var cached: StoreModel?
        do {
            cached = try ModelCacheReader.read(connection)
        } catch let error as ModelError {
            if case .cacheUnreadable(_, let detail) = error {
                notes.append("Z_MODELCACHE is present but cannot be read (\(detail)); " + (xcodeModel == nil
                    ? "the model was inferred from the SQL schema instead"
                    : "the Xcode model given with --model is used instead"))
            } else {
                throw error
            }
        }
        let xcode = try xcodeModel.map { url throws(ModelError) in try XcodeModelReader.read(url) }
        if var model = cached {
            if let xcode {
                model.disagreements = compare(model, xcode)
                if model.disagreements.isEmpty {
                    model.notes.append("the Xcode model \(xcode.origin) agrees with the cached model")
                }
            }
            return model
        }
        if var model = xcode {
            if store.modelCacheBytes == nil { notes.append("the store has no Z_MODELCACHE table; the model comes from --model") }
            model.notes = notes + model.notes
            return model
        }
        var model = try InferredModelBuilder.infer(connection, store: store)
        model.notes = notes + model.notes
        return model
    }

    /// Every difference between the cached model and an Xcode model, one sentence each.
    public static func compare(_ cache: StoreModel, _ xcode: StoreModel) -> [String] {
        var out: [String] = []
        let cacheNames = Set(cache.entities.map(\.name)), xcodeNames = Set(xcode.entities.map(\.name))
        for name in cacheNames.subtracting(xcodeNames).sorted() { out.append("entity \(name) is in the cached model but not in the Xcode model") }
        for name in xcodeNames.subtracting(cacheNames).sorted() { out.append("entity \(name) is in the Xcode model but not in the cached model") }
        func differ<T: Equatable>(_ what: String, _ a: T, _ b: T, _ show: (T) -> String) {
            if a != b { out.append("\(what): \(show(a)) in the cache, \(show(b)) in the Xcode model") }
        }
        func text(_ s: String?) -> String { s.map { "\"\($0)\"" } ?? "none" }
        for c in cache.entities.sorted(by: { $0.name < $1.name }) {
            guard let x = xcode.entity(c.name) else { continue }
            let e = c.name
            differ("\(e) class name", c.className ?? "NSManagedObject", x.className ?? "NSManagedObject", { $0 })
            differ("\(e) parent", c.parent, x.parent, text)
            differ("\(e) abstract", c.isAbstract, x.isAbstract, { $0 ? "yes" : "no" })
            differ("\(e) renaming identifier", c.renamingIdentifier ?? e, x.renamingIdentifier ?? e, { "\"\($0)\"" })
            let ca = Dictionary(c.attributes.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            let xa = Dictionary(x.attributes.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            for name in Set(ca.keys).subtracting(xa.keys).sorted() { out.append("attribute \(e).\(name) is only in the cached model") }
            for name in Set(xa.keys).subtracting(ca.keys).sorted() { out.append("attribute \(e).\(name) is only in the Xcode model") }
            for name in Set(ca.keys).intersection(xa.keys).sorted() {
                let a = ca[name]!, b = xa[name]!, p = "\(e).\(name)"
                differ("\(p) type", a.type, b.type, { $0.name })
                differ("\(p) optional", a.isOptional, b.isOptional, { $0 ? "yes" : "no" })
                differ("\(p) transient", a.isTransient, b.isTransient, { $0 ? "yes" : "no" })
                differ("\(p) renaming identifier", a.renamingIdentifier ?? name, b.renamingIdentifier ?? name, { "\"\($0)\"" })
                differ("\(p) value transformer", a.valueTransformerName, b.valueTransformerName, text)
                differ("\(p) external storage", a.allowsExternalBinaryDataStorage, b.allowsExternalBinaryDataStorage, { $0 ? "allowed" : "not allowed" })
                differ("\(p) composite elements", a.elements.map(\.name).sorted(), b.elements.map(\.name).sorted(), { $0.joined(separator: ", ") })
            }
            let cr = Dictionary(c.relationships.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            let xr = Dictionary(x.relationships.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
            for name in Set(cr.keys).subtracting(xr.keys).sorted() { out.append("relationship \(e).\(name) is only in the cached model") }
            for name in Set(xr.keys).subtracting(cr.keys).sorted() { out.append("relationship \(e).\(name) is only in the Xcode model") }
            for name in Set(cr.keys).intersection(xr.keys).sorted() {
                let a = cr[name]!, b = xr[name]!, p = "\(e).\(name)"
                differ("\(p) destination", a.destination, b.destination, { $0 })
                differ("\(p) to-many", a.isToMany, b.isToMany, { $0 ? "to-many" : "to-one" })
                differ("\(p) ordered", a.isOrdered, b.isOrdered, { $0 ? "ordered" : "unordered" })
                differ("\(p) inverse", a.inverse, b.inverse, text)
                differ("\(p) delete rule", a.deleteRule, b.deleteRule, { $0.name })
                differ("\(p) optional", a.isOptional, b.isOptional, { $0 ? "yes" : "no" })
                differ("\(p) renaming identifier", a.renamingIdentifier ?? name, b.renamingIdentifier ?? name, { "\"\($0)\"" })
                if a.isToMany && b.isToMany {
                    differ("\(p) minimum count", a.minCount, b.minCount, String.init)
                    differ("\(p) maximum count", a.maxCount, b.maxCount, String.init)
                }
            }
            differ("\(e) uniqueness constraints", Set(c.uniqueConstraints), Set(x.uniqueConstraints),
                   { $0.map { "(" + $0.joined(separator: ", ") + ")" }.sorted().joined(separator: " ") })
            differ("\(e) fetch indexes", Set(c.fetchIndexes.map(\.name)), Set(x.fetchIndexes.map(\.name)),
                   { $0.sorted().joined(separator: ", ") })
        }
        return out
    }
}

/// A store opened for schema, rows and history: the connection (WAL applied), its Core Data
/// structure, the chosen model and its SQL map, and a value decoder pointed at the original
/// support folder (for external-storage files, whose existence is checked there).
public final class OpenedStore {
    public let displayPath: String
    public let connection: Connection
    public let store: CoreDataStore
    public let map: SchemaMap
    public let decoder: ValueDecoder

    public var model: StoreModel { map.model }

    public init(displayPath: String, connection: Connection, store: CoreDataStore, map: SchemaMap, decoder: ValueDecoder) {
        self.displayPath = displayPath
        self.connection = connection
        self.store = store
        self.map = map
        self.decoder = decoder
    }

    /// Opens the working copy (WAL applied) and maps it. Throws `ModelError.notCoreData` for
    /// plain SQLite, `ModelError.xcodeModelUnreadable` for a bad `--model`.
    public static func open(_ copy: WorkingCopy, displayPath: String, xcodeModel: URL? = nil) throws -> OpenedStore {
        let connection = try copy.open()
        return try open(connection: connection, displayPath: displayPath,
                        decoder: ValueDecoder(copy),
                        xcodeModel: xcodeModel)
    }

    /// Maps an already-open view of a store (for example a point-in-time image).
    public static func open(connection: Connection, displayPath: String, decoder: ValueDecoder, xcodeModel: URL? = nil) throws -> OpenedStore {
        do {
            guard let store = try CoreDataStore.read(connection) else { throw ModelError.notCoreData(path: displayPath) }
            let model = try ModelLoader.load(connection: connection, store: store, xcodeModel: xcodeModel)
            let map = try SchemaMap.build(model: model, store: store, connection: connection, path: displayPath)
            return OpenedStore(displayPath: displayPath, connection: connection, store: store, map: map, decoder: decoder)
        } catch let error as SQLiteError {
            throw error.isCorrupt || error.isNotADatabase
                ? AcquisitionError.corrupt(path: displayPath, detail: "SQLite: \(error.message)")
                : AcquisitionError.sqlite(error.with(path: displayPath))
        }
    }

    /// The entity named (current, legacy or class name), or `ModelError.unknownEntity`.
    public func entity(_ query: String) throws -> EntityMapping {
        guard let e = map.resolveEntity(query) else {
            throw ModelError.unknownEntity(name: query, path: displayPath, suggestion: map.suggestion(for: query))
        }
        return e
    }
}
