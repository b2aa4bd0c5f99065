import StoreBuilder

/// A model of shapes in three levels of inheritance, for the readers of entity numbering and counts.
enum ShapesFixture {
    /// Three levels of inheritance, so counts by Z_ENT and including subentities differ.
    static let model = ModelDescription(entities: [
        EntityDescription("Shape", isAbstract: true, attributes: [AttributeDescription("name", .string)]),
        EntityDescription("Polygon", parent: "Shape", attributes: [AttributeDescription("sides", .integer16)]),
        EntityDescription("Square", parent: "Polygon", attributes: [AttributeDescription("side", .double)]),
        EntityDescription("Circle", parent: "Shape", attributes: [AttributeDescription("radius", .double)]),
        EntityDescription("Canvas", attributes: [AttributeDescription("title", .string)]),
    ], versionIdentifiers: [""])
}
