import Foundation
import StorelensKit
import StoreTestSupport
import Testing

/// The snippet docs/library.md gives for rows as `rows --format jsonl` writes them, run as it is
/// written there, against the command's own output.
@Suite("docs/library.md: rows as JSON Lines from the library")
struct FlatRowsExampleTests {
    @Test("RowsWriter.flat over Storelens.rows gives the command's JSON Lines, line for line")
    func sameAsCommand() throws {
        let folder = try TemporaryFolder("flat-rows-example")
        let store = try SampleStores.demo(in: folder)
        var lines: [String] = []
        // As in docs/library.md (with the store's path and entity):
        let options = Storelens.RowsOptions(entity: "TodoItem")
        try Storelens.rows(store.path, options) { result in
            guard case .sqlite(let rows) = result else { return }
            let keys = rows.fields.map(RowsWriter.flatKey)
            try rows.forEach { row in
                lines.append(RowsWriter.flat(row, keys: keys).rendered(pretty: false))
            }
        }
        let command = try CLI.run(["rows", store.path, "TodoItem", "--format", "jsonl"])
        #expect(command.status == 0, "\(command.stderr)")
        #expect(!lines.isEmpty)
        #expect(lines == command.stdout.split(separator: "\n").map(String.init))
    }
}
