import CoreDataStore
import Foundation
import Testing
@testable import Coexistence

/// Legacy JSON values compared by the model's attribute type, not by their JSON spelling.
@Suite("JSON values by attribute type")
struct RecordValueTests {
    static func canonical(_ json: String, _ type: ModelAttributeType) throws -> String? {
        RecordValue.canonical(json: try PositionedJSON.parse(json), as: type)
    }

    @Test("true/false equal a stored 1/0 under numeric and Boolean attributes; numeric strings read as numbers")
    func byType() throws {
        let storedOne = RecordValue.canonical(FieldValue.integer(1))
        let storedTrue = RecordValue.canonical(FieldValue.bool(true))
        #expect(try Self.canonical("true", .integer16) == storedOne)
        #expect(try Self.canonical("false", .integer64) == RecordValue.canonical(FieldValue.integer(0)))
        #expect(try Self.canonical("1", .boolean) == storedTrue)
        #expect(try Self.canonical("true", .boolean) == storedTrue)
        #expect(try Self.canonical("\"42\"", .integer32) == RecordValue.canonical(FieldValue.integer(42)))
        #expect(try Self.canonical("\"2.5\"", .double) == RecordValue.canonical(FieldValue.real(2.5)))
        // A String attribute keeps the text: "true" is not the number 1 there.
        #expect(try Self.canonical("\"true\"", .string) == "true")
        #expect(try Self.canonical("true", .integer16) != RecordValue.canonical(FieldValue.integer(2)))
    }
}
