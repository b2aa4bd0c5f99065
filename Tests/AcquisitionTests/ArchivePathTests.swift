import Acquisition
import Testing

@Suite("Archive path sanitising")
struct ArchivePathTests {
    @Test("safe names keep their components", arguments: [
        ("Library/Application Support/default.store", ["Library", "Application Support", "default.store"], false),
        ("./a/./b//c.db", ["a", "b", "c.db"], false),
        ("/abs/evil.db", ["abs", "evil.db"], true),
        (#"..\..\x.db"#, [#"..\..\x.db"#], false),
        ("データ/ストア.sqlite", ["データ", "ストア.sqlite"], false),
    ])
    func safe(_ raw: String, _ components: [String], _ absolute: Bool) {
        #expect(ArchivePath.sanitize(raw) == .safe(components: components, wasAbsolute: absolute))
    }

    @Test("traversal and junk are rejected, never resolved", arguments: [
        "../../escape.db", "app/./x/../../../escape2.db", "a/..", "..", "", "/", "./.", "a\u{0}b",
        String(repeating: "x/", count: 300) + "f", String(repeating: "n", count: 300),
    ])
    func rejected(_ raw: String) {
        guard case .rejected = ArchivePath.sanitize(raw) else {
            Issue.record("\(raw.prefix(40)) was accepted")
            return
        }
    }

    @Test("raw names that are not UTF-8 stay distinct")
    func rawNames() {
        let latin1 = ArchivePath.decode(rawBytes: Array("caf".utf8) + [0xE9] + Array(".db".utf8))
        let utf8 = ArchivePath.decode(rawBytes: Array("café.db".utf8))
        #expect(latin1 == "caf%E9.db")
        #expect(utf8 == "café.db")
        #expect(latin1 != utf8)
    }
}
