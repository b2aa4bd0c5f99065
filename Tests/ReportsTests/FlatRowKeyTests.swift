import Reports
import Testing

@Suite("rows: flat object keys")
struct FlatRowKeyTests {
    @Test("a property named like a reserved key never takes its place, and no two labels share a key")
    func reservedKeys() {
        let labels = ["_entity", "_pk", "__pk", "___pk", "pk", "entity", "_", "__", "name", "Book.title", "Poll.options order"]
        let keys = labels.map(RowsWriter.flatKey)
        #expect(Set(keys).count == labels.count, "distinct labels stay distinct: \(keys)")
        #expect(!keys.contains(RowsWriter.entityKey) && !keys.contains(RowsWriter.pkKey))
        #expect(keys == ["__entity", "__pk", "___pk", "____pk", "pk", "entity", "__", "___", "name", "Book.title", "Poll.options order"])
    }
}
