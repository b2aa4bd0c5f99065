import Foundation
import StoreFormats

/// Reads a pre-Xcode-4 `.xcdatamodel` (no `contents` XML): its `elements` file is a binary
/// `NSKeyedArchiver` archive of Xcode's design model (`XDPMModel`), not of
/// `NSManagedObjectModel`. Entities are `XDPMEntity` objects in the root package's
/// `XDBucketForClassesstorage`; each attribute (`XDPMAttribute`) keeps its settings as the
/// `_default` of stereotype properties (`XD_PAttK_attributeType`, `XD_PPSK_isOptional`,
/// `XD_PPSK_isTransient`). Seen on an iPhone OS 3-era store (framework 248,
/// `coredata-2013-legacy-model`). What this reader does not understand (relationships,
/// superentities) it names instead of guessing.
enum LegacyXcodeModelReader {
    static let maxBytes = 32 << 20

    static func read(_ elements: URL, origin: String) throws(ModelError) -> StoreModel {
        let data = try ModelFile.read(elements, what: "the elements file", limit: maxBytes)
        do {
            var model = try parse(data)
            model.origin = origin
            return model
        } catch let error as ModelError {
            throw error
        } catch {
            throw .xcodeModelUnreadable(path: elements.path, detail: "the pre-Xcode-4 elements archive cannot be read: \(error)")
        }
    }

    struct Unreadable: Error, CustomStringConvertible { let description: String }

    static func parse(_ data: Data) throws -> StoreModel {
        let archive = try KeyedArchive(data: data)
        guard let root = try archive.object(archive.root), root.isKind(of: "XDPMModel") else {
            throw Unreadable(description: "its root is not an Xcode design model (XDPMModel)")
        }
        guard let packageRef = try archive.reference("_xd_rootPackage", in: root),
              let package = try archive.object(packageRef),
              let classesRef = try archive.reference("XDBucketForClassesstorage", in: package),
              let classes = try archive.stringKeyedDictionary(classesRef) else {
            throw Unreadable(description: "the model has no root package of entities")
        }
        var notes: [String] = ["read from a pre-Xcode-4 model (elements archive); relationships and parents are not read from this form"]
        var entities: [ModelEntity] = []
        for entry in classes.prefix(ModelCacheReader.maxEntities) {
            guard let object = try archive.object(entry.value), object.isKind(of: "XDPMEntity") else { continue }
            let name = try archive.reference("_name", in: object).flatMap { try archive.string($0) } ?? entry.key
            var entity = ModelEntity(name: name)
            entity.isAbstract = object.bool("_isAbstract") ?? false
            if let generalizations = try archive.reference("XDBucketForGeneralizationsstorage", in: object),
               let members = try? archive.array(generalizations), !members.isEmpty {
                notes.append("\(name) names a parent entity in a form this reader does not decode; it is read as a root entity")
            }
            if let ownedRef = try archive.reference("XDBucketForOwnedAttributesstorage", in: object),
               let owned = try archive.stringKeyedDictionary(ownedRef) {
                for property in owned.prefix(ModelCacheReader.maxPropertiesPerEntity) {
                    guard let attribute = try archive.object(property.value) else { continue }
                    guard attribute.isKind(of: "XDPMAttribute") else {
                        notes.append("\(name).\(property.key) is a \(attribute.className ?? "property") (not an attribute); not read")
                        continue
                    }
                    let settings = try stereotypeDefaults(of: attribute, archive: archive)
                    let code = settings["XD_PAttK_attributeType"]?.intValue.flatMap { Int(exactly: $0) } ?? 0
                    var a = ModelAttribute(name: try archive.reference("_name", in: attribute).flatMap { try archive.string($0) } ?? property.key,
                                           type: ModelAttributeType(code: code))
                    a.isOptional = settings["XD_PPSK_isOptional"]?.boolValue ?? true
                    a.isTransient = settings["XD_PPSK_isTransient"]?.boolValue ?? false
                    entity.attributes.append(a)
                }
            }
            entity.attributes.sort { $0.name < $1.name }
            entities.append(entity)
        }
        guard !entities.isEmpty else { throw Unreadable(description: "the archive holds no entities (XDPMEntity)") }
        return StoreModel(source: .xcdatamodel, entities: entities.sorted { $0.name < $1.name }, versionIdentifiers: [""],
                          origin: "elements", notes: notes)
    }

    /// The `_default` of every stereotype property of an element, by property name.
    static func stereotypeDefaults(of element: KeyedArchive.ArchivedObject, archive: KeyedArchive) throws -> [String: PlistValue] {
        var result: [String: PlistValue] = [:]
        guard let storageRef = try archive.reference("XDBucketForStereotypesstorage", in: element),
              let stereotypes = try archive.stringKeyedDictionary(storageRef) else { return result }
        for stereotype in stereotypes.prefix(64) {
            guard let object = try archive.object(stereotype.value),
                  let ownedRef = try archive.reference("XDBucketForOwnedAttributesstorage", in: object),
                  let owned = try archive.stringKeyedDictionary(ownedRef) else { continue }
            for property in owned.prefix(64) {
                guard let imp = try archive.object(property.value), let valueRef = try archive.reference("_default", in: imp),
                      let value = try archive.rawValue(valueRef) else { continue }
                result[property.key] = value
            }
        }
        return result
    }
}
