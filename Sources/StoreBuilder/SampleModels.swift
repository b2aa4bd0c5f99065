import Foundation

/// Models used by tests, fixtures and the demo.
public enum SampleModels {
    /// The model of the real SwiftData store in ../shared/fixtures/real/swiftdata-resources,
    /// as its README describes it in words: the builder's fidelity test compares against it.
    public static let resources = ModelDescription(entities: [
        EntityDescription("Item",
                          attributes: [AttributeDescription("name", .string, optional: false)],
                          relationships: [RelationshipDescription("craftingRecipe", to: "CraftingRecipe", inverse: "producedItem")],
                          uniqueConstraints: [["name"]]),
        EntityDescription("Component",
                          attributes: [AttributeDescription("id", .uuid, optional: false, default: .uuid(UUID())),
                                       AttributeDescription("count", .integer64, optional: false, default: .int(1))],
                          relationships: [RelationshipDescription("item", to: "Item"),
                                          RelationshipDescription("craftingRecipe", to: "CraftingRecipe", inverse: "requiredComponents")]),
        EntityDescription("CraftingRecipe",
                          attributes: [AttributeDescription("producedItemCount", .string, optional: false, default: .string("1"))],
                          relationships: [RelationshipDescription("requiredComponents", to: "Component", inverse: "craftingRecipe", toMany: true),
                                          RelationshipDescription("producedItem", to: "Item", inverse: "craftingRecipe")]),
    ], versionIdentifiers: ["1.0.0"])

    /// A to-do app's SwiftData model, for the demo container.
    public static let todo = ModelDescription(entities: [
        EntityDescription("TodoList",
                          attributes: [AttributeDescription("name", .string, optional: false)],
                          relationships: [RelationshipDescription("items", to: "TodoItem", inverse: "list", toMany: true, deleteRule: .cascade)],
                          uniqueConstraints: [["name"]]),
        EntityDescription("TodoItem",
                          attributes: [AttributeDescription("id", .uuid, optional: false),
                                       AttributeDescription("title", .string, optional: false),
                                       AttributeDescription("isCompleted", .boolean, optional: false, default: .bool(false)),
                                       AttributeDescription("createdAt", .date, optional: false),
                                       AttributeDescription("notes", .string)],
                          relationships: [RelationshipDescription("list", to: "TodoList", inverse: "items")]),
    ], versionIdentifiers: ["1.0.0"])
}
