import Reports
import Testing

@Suite("text tables")
struct TextTableTests {
    @Test("text tables never pass control characters to the terminal")
    func sanitizedCells() {
        let out = TextTable.render([["NAME"], ["evil\u{1b}[2Jname"]])
        #expect(!out.contains("\u{1b}"))
        #expect(out.contains("evil\u{FFFD}[2Jname"))
    }
}
