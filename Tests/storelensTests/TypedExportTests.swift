import Foundation
import SQLiteAccess
import StoreBuilder
import StoreTestSupport
import Testing

/// datasette from PyPI, in a virtualenv under `.build/` (made once).
enum Datasette {
    static let unavailable = "datasette could not be installed (python3 -m venv + pip install datasette from PyPI); the reason is printed above. Opening exports in it is skipped"
    static let venv: URL? = PythonVenv.make("datasette", packages: ["datasette"], probe: ["datasette", "--version"])
    static var available: Bool { venv != nil }

    /// datasette's JSON for `path` (`/db/table.json?…`) of the database `file`, through its own
    /// in-process client: what its web page and API show.
    static func get(_ path: String, file: URL) throws -> [String: Any] {
        let python = try #require(venv).appendingPathComponent("bin/python")
        let script = """
        import asyncio, sys
        from datasette.app import Datasette
        async def main():
            ds = Datasette([sys.argv[1]])
            await ds.invoke_startup()
            response = await ds.client.get(sys.argv[2])
            print(response.text)
        asyncio.run(main())
        """
        let run = PythonVenv.run([python.path, "-c", script, file.path, path])
        #expect(run.status == 0, "\(run.stderr.suffix(800))")
        return try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run.stdout.prefix(500))")
    }
}

/// `export`'s columns typed by their properties, to-one relationships and link tables as foreign
/// keys with indexes, and `_storelens_columns` saying what each column holds; a type declared only
/// where every value already has it, so no value is converted.
@Suite("export: typed columns and foreign keys for datasette")
struct TypedExportTests {
    static func export(_ store: URL, in folder: TemporaryFolder) throws -> URL {
        let out = folder.path("pets.sqlite")
        let run = try CLI.run(["export", store.path, "--out", out.path])
        #expect(run.status == 0, "\(run.stderr)")
        return out
    }

    @Test("declared types, foreign keys into single tables, an index on each, and _storelens_columns")
    func typesAndKeys() throws {
        let folder = try TemporaryFolder("typed-export")
        let out = try Self.export(try PetsStore.make(in: folder), in: folder)
        let db = try Connection.open(path: out.path, mode: .readOnly)
        func declared(_ table: String) throws -> [String: String] {
            Dictionary(uniqueKeysWithValues: try db.rows("SELECT name, type FROM pragma_table_info(?)", [.text(table)]).map { ($0[0].string ?? "", $0[1].string ?? "") })
        }
        let dog = try declared("Dog")
        #expect(dog["_pk"] == "INTEGER" && dog["name"] == "TEXT" && dog["weight"] == "REAL" && dog["born"] == "TEXT" && dog["id"] == "TEXT", "\(dog)")
        #expect(try declared("Cat")["indoor"] == "INTEGER")
        // Dog.owner points into Owner (no subentities): a foreign key with an index.
        let keys = try db.rows("SELECT \"table\", \"from\", \"to\" FROM pragma_foreign_key_list('Dog')").map { ($0[0].string ?? "", $0[1].string ?? "", $0[2].string ?? "") }
        #expect(keys.contains { $0 == ("Owner", "owner", "_pk") }, "\(keys)")
        let indexed = try db.rows("SELECT il.name FROM pragma_index_list('Dog') il").compactMap { $0[0].string }
        #expect(indexed.contains("Dog_owner_fk"), "\(indexed)")
        // Tag.mascot points at Animal, whose rows are in Dog, Cat and Animal: no foreign key can say which.
        #expect(try db.rows("SELECT \"from\" FROM pragma_foreign_key_list('Tag')").isEmpty)
        // The link table's two sides.
        let link = try db.scalar("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%tags%'").string ?? ""
        // Its Animal side points into three tables (no key); its Tag side into one.
        #expect(try db.rows("SELECT \"table\" FROM pragma_foreign_key_list(?)", [.text(link)]).compactMap { $0[0].string } == ["Tag"], "\(link)")
        let described = try db.rows("SELECT \"table\", \"column\", declared_type, holds FROM _storelens_columns WHERE \"table\" = 'Dog' AND \"column\" = 'born'")
        #expect(described.first?[3].string == "date as ISO 8601 UTC text", "\(described)")
        // Every value is what SQLite held in the store, decoded: the types changed nothing (the rows test compares them).
        #expect(try db.rows("PRAGMA foreign_key_check").isEmpty, "every key of this whole store points at a row")
        #expect(try db.scalar("SELECT count(*) FROM Dog WHERE typeof(weight) NOT IN ('real', 'null')").int == 0)
    }

    @Test("a column whose values are not all of its property's type stays undeclared, every value as stored")
    func mixedColumnKeptAsStored() throws {
        let folder = try TemporaryFolder("typed-export-mixed")
        let store = try PetsStore.make(in: folder)
        // A damaged store: one Animal's weight (a Double attribute) holds text.
        let raw = try Connection.open(path: store.path, mode: .readWrite)
        try raw.execute("UPDATE ZANIMAL SET ZWEIGHT = 'twelve' WHERE ZNAME = 'Fido'")
        let stored = try raw.scalar("SELECT typeof(ZWEIGHT) || ':' || ZWEIGHT FROM ZANIMAL WHERE ZNAME = 'Fido'").string
        #expect(stored == "text:twelve")
        let out = try Self.export(store, in: folder)
        let db = try Connection.open(path: out.path, mode: .readOnly)
        let type = try db.scalar("SELECT type FROM pragma_table_info('Dog') WHERE name = 'weight'").string
        #expect(type == "", "left undeclared: \(type ?? "nil")")
        #expect(try db.scalar("SELECT typeof(weight) || ':' || weight FROM Dog WHERE name = 'Fido'").string == stored, "the text stays text")
        let holds = try db.scalar("SELECT holds FROM _storelens_columns WHERE \"table\" = 'Dog' AND \"column\" = 'weight'").string ?? ""
        #expect(holds.contains("kept as stored"), "\(holds)")
    }

    @Test("datasette shows a to-one relationship as a link to its row (its label from the target table)",
          .enabled(if: Datasette.available, Comment(rawValue: Datasette.unavailable)))
    func datasetteLinks() throws {
        let folder = try TemporaryFolder("typed-export-datasette")
        let out = try Self.export(try PetsStore.make(in: folder), in: folder)
        let page = try Datasette.get("/pets/Dog.json?_labels=on&_shape=objects", file: out)
        let rows = try #require(page["rows"] as? [[String: Any]], "\(page.keys)")
        let rex = try #require(rows.first { $0["name"] as? String == "Rex" })
        let owner = try #require(rex["owner"] as? [String: Any], "owner is shown as a link: \(rex["owner"] ?? "nil")")
        #expect(owner["label"] as? String == "Ana", "\(owner)")
        #expect(owner["value"] as? Int != nil)
    }

    /// Names the store chose may collide with the ones export makes: a table named like a foreign
    /// key's index, two indexes made of different parts with one name, a link table's two columns
    /// equal but for case. Every name goes through the one unique-naming rule, and SQLite refusing
    /// a statement is never reported as a full disk.
    @Test("entity names that collide with export's index and link-column names: exported, every foreign key indexed, no 'disk' error")
    func collidingNames() throws {
        let models: [(String, ModelDescription, [String: [String: BuilderValue]])] = [
            ("a table named like an index", ModelDescription(entities: [
                EntityDescription("Owner", attributes: [.init("name", .string)], relationships: [RelationshipDescription("items", to: "Item", inverse: "owner", toMany: true)]),
                EntityDescription("Item", attributes: [.init("title", .string)], relationships: [RelationshipDescription("owner", to: "Owner", inverse: "items")]),
                EntityDescription("Item_owner_fk", attributes: [.init("note", .string)]),
            ]), [:]),
            ("two indexes of one name", ModelDescription(entities: [
                EntityDescription("X", attributes: [.init("v", .string)]),
                EntityDescription("A", attributes: [.init("t", .string)], relationships: [RelationshipDescription("b_c", to: "X")]),
                EntityDescription("A_b", attributes: [.init("t", .string)], relationships: [RelationshipDescription("c", to: "X")]),
            ]), [:]),
            ("a many-to-many between Tag and its subentity tag", ModelDescription(entities: [
                EntityDescription("Tag", attributes: [.init("name", .string)], relationships: [RelationshipDescription("children", to: "tag", inverse: "parents", toMany: true)]),
                EntityDescription("tag", parent: "Tag", relationships: [RelationshipDescription("parents", to: "Tag", inverse: "children", toMany: true)]),
            ]), [:]),
        ]
        for (what, model, _) in models {
            let folder = try TemporaryFolder("export-names")
            let store = folder.path("default.store")
            let writer = try StoreWriter(url: store, model: model)
            try writer.transaction { w in
                for e in model.entities where !e.isAbstract { _ = try w.insert(e.name, [:]) }
            }
            try writer.close()
            let out = folder.path("export.sqlite")
            let run = try CLI.run(["export", store.path, "--out", out.path])
            #expect(run.status == 0, "\(what): \(run.stderr)")
            #expect(!run.stderr.contains("free space"), "\(what): SQLite refusing a name is not a full disk")
            guard run.status == 0 else { continue }
            let db = try Connection.open(path: out.path, mode: .readOnly)
            // Every declared foreign key has its index, whatever it had to be named.
            for table in try db.rows("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap({ $0[0].string }) {
                for key in try db.rows("SELECT \"from\" FROM pragma_foreign_key_list(?)", [.text(table)]).compactMap({ $0[0].string }) {
                    let indexed = try db.rows("SELECT 1 FROM pragma_index_list(?) AS l, pragma_index_info(l.name) AS i WHERE i.name = ?", [.text(table), .text(key)])
                    #expect(!indexed.isEmpty, "\(what): \(table).\(key) has no index")
                }
            }
        }
    }
}
