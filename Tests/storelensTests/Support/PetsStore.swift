import Foundation
import StoreBuilder
import StoreTestSupport

/// A small store for the export tests: a hierarchy (Animal, Dog, Cat), a to-one into it, a
/// to-one out of it (Animal.owner), and a many-to-many (Animal.tags).
enum PetsStore {
    static let model = ModelDescription(entities: [
        EntityDescription("Owner", attributes: [AttributeDescription("name", .string)],
                          relationships: [RelationshipDescription("pets", to: "Animal", inverse: "owner", toMany: true)]),
        EntityDescription("Animal", attributes: [AttributeDescription("id", .uuid), AttributeDescription("name", .string),
                                                 AttributeDescription("born", .date), AttributeDescription("weight", .double)],
                          relationships: [RelationshipDescription("owner", to: "Owner", inverse: "pets"),
                                          RelationshipDescription("tags", to: "Tag", inverse: "animals", toMany: true)]),
        EntityDescription("Dog", parent: "Animal", attributes: [AttributeDescription("breed", .string)]),
        EntityDescription("Cat", parent: "Animal", attributes: [AttributeDescription("indoor", .boolean)]),
        EntityDescription("Tag", attributes: [AttributeDescription("label", .string)],
                          relationships: [RelationshipDescription("animals", to: "Animal", inverse: "tags", toMany: true),
                                          // To a destination with subentities: the target's entity goes in its own column.
                                          RelationshipDescription("mascot", to: "Animal")]),
    ])

    static func make(in folder: TemporaryFolder) throws -> URL {
        let url = folder.path("Pets.sqlite")
        let writer = try StoreWriter(url: url, model: model, options: .init(journalMode: .delete))
        try writer.transaction(.init(bundleID: "com.example.pets")) { w in
            let owner = try w.insert("Owner", ["name": .string("Ana")])
            let rex = try w.insert("Dog", ["id": .uuid(UUID()), "name": .string("Rex"), "breed": .string("=1+1"),
                                           "born": .date(Date(timeIntervalSinceReferenceDate: 700_000_000.25)), "owner": .object(entity: "Owner", pk: owner)])
            _ = try w.insert("Dog", ["name": .string("Fido"), "weight": .double(12.5)])
            let tom = try w.insert("Cat", ["name": .string("Tom"), "indoor": .bool(true), "owner": .object(entity: "Owner", pk: owner)])
            _ = try w.insert("Animal", ["name": .string("Generic\u{0}Name")])
            let a = try w.insert("Tag", ["label": .string("good"), "mascot": .object(entity: "Cat", pk: tom)])
            let b = try w.insert("Tag", ["label": .string("loud")])
            try w.link("Animal", pk: rex, "tags", to: [a, b])
            try w.link("Animal", pk: tom, "tags", to: [a])
        }
        try writer.close()
        return url
    }
}
