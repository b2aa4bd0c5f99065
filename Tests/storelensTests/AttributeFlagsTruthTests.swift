import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// `NSFlagsKey` read the way Apple's model caches write it: on every genuine store with a
/// `Z_MODELCACHE`, `schema --format json` says external storage (bit 0x04) and preserved on
/// deletion (bit 0x10) for exactly the attributes whose cached flags carry them. The flags are
/// read independently, by Python's zlib and plistlib from a copy opened with Python's sqlite3.
@Suite("Attribute flags from Apple's model caches")
struct AttributeFlagsTruthTests {
    static let script = #"""
    import sqlite3, zlib, plistlib, sys, shutil, glob, os, tempfile
    src = sys.argv[1]
    work = tempfile.mkdtemp(prefix="sltest-flags-")
    try:
        for f in glob.glob(glob.escape(src) + "*"):
            shutil.copy(f, work)
        db = sqlite3.connect(os.path.join(work, os.path.basename(src)))
        try:
            blob = db.execute("SELECT Z_CONTENT FROM Z_MODELCACHE").fetchone()[0]
        except sqlite3.Error:
            print("no-cache"); sys.exit(0)
        finally:
            pass
        db.close()
        archive = plistlib.loads(zlib.decompress(blob, -15))
        objects = archive["$objects"]
        def deref(v):
            return objects[v.data] if isinstance(v, plistlib.UID) else v
        # Entities by name with their superentity, so a flag also holds for every subentity
        # (which inherits the attribute, whether or not its cache keeps a copy of it).
        parent = {}
        for o in objects:
            if isinstance(o, dict) and "NSEntityName" in o:
                sup = deref(o.get("NSSuperentity"))
                parent[deref(o["NSEntityName"])] = deref(sup.get("NSEntityName")) if isinstance(sup, dict) else None
        def lineage(name):
            seen = []
            while name is not None and name not in seen:
                seen.append(name); name = parent.get(name)
            return seen
        for o in objects:
            if isinstance(o, dict) and "NSAttributeType" in o and "NSFlagsKey" in o:
                entity = deref(deref(o["NSEntity"]).get("NSEntityName"))
                flags = o["NSFlagsKey"]
                for flag, bit in (("external", 0x04), ("preserved", 0x10)):
                    if flags & bit:
                        for e in parent:
                            if entity in lineage(e):
                                print("%s\t%s\t%s" % (flag, e, deref(o["NSPropertyName"])))
    finally:
        shutil.rmtree(work)
    """#

    struct OracleFailure: Error, CustomStringConvertible {
        let store: String, stderr: String
        var description: String { "python3 could not read the model cache of \(store): \(stderr)" }
    }

    struct Flagged: Hashable, CustomStringConvertible {
        let flag: String, entity: String, attribute: String
        var description: String { "\(flag) \(entity).\(attribute)" }
    }

    /// The flagged attributes per Python, or nil when the store has no model cache.
    static func oracle(_ store: URL) throws -> Set<Flagged>? {
        let run = try CLI.bounded(["python3", "-c", script, store.path], executable: URL(fileURLWithPath: "/usr/bin/env"))
        guard run.status == 0, !run.signaled else { throw OracleFailure(store: store.path, stderr: run.stderr) }
        let lines = run.stdout.split(separator: "\n").map(String.init)
        if lines == ["no-cache"] { return nil }
        return Set(lines.map { line in
            let parts = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            return Flagged(flag: parts[0], entity: parts[1], attribute: parts[2])
        })
    }

    /// What `schema --format json` says, as the oracle counts it: every entity lists the
    /// attributes it inherits too.
    static func reported(_ schema: String) throws -> Set<Flagged> {
        let json = try #require(try JSONSerialization.jsonObject(with: Data(schema.utf8)) as? [String: Any])
        var reported = Set<Flagged>()
        for entity in json["entities"] as? [[String: Any]] ?? [] {
            for attribute in entity["attributes"] as? [[String: Any]] ?? [] {
                guard let owner = entity["name"] as? String, let name = attribute["name"] as? String else { continue }
                if attribute["externalStorage"] as? Bool == true { reported.insert(Flagged(flag: "external", entity: owner, attribute: name)) }
                if attribute["preservedOnDeletion"] as? Bool == true { reported.insert(Flagged(flag: "preserved", entity: owner, attribute: name)) }
            }
        }
        return reported
    }

    static let pythonAvailable: Bool =
        (try? CLI.bounded(["python3", "-c", "import plistlib, zlib, sqlite3"], executable: URL(fileURLWithPath: "/usr/bin/env")).status) == 0

    @Test("external storage and preserved-on-deletion match the cache's NSFlagsKey",
          .enabled(if: ProjectPaths.hasRealFixtures, Comment(rawValue: ProjectPaths.realFixturesMissing)),
          .enabled(if: pythonAvailable, "python3 with plistlib, zlib and sqlite3 is not available to read the caches independently"),
          arguments: ProjectPaths.realFixtureFolders())
    func flagsMatchCache(folderName: String) throws {
        let folder = try #require(ProjectPaths.realFixtures()).appendingPathComponent(folderName)
        guard let store = try ProjectPaths.realStoreFile(in: folder), let expected = try Self.oracle(store) else { return }
        let result = try CLI.run(["schema", store.path, "--format", "json"])
        #expect(result.status == 0, "\(result.stderr)")
        let reported = try Self.reported(result.stdout)
        #expect(reported.subtracting(expected).isEmpty, "reported but not in the cache: \(reported.subtracting(expected).sorted { $0.description < $1.description })")
        #expect(expected.subtracting(reported).isEmpty, "in the cache but not reported: \(expected.subtracting(reported).sorted { $0.description < $1.description })")
    }
}

extension AttributeFlagsTruthTests {
    /// The builder is held to the same oracle: a store it writes with external storage and a
    /// value preserved on deletion says so in its cache exactly as Apple's do.
    @Test("a builder store's cache carries the same bits, read the same way",
          .enabled(if: pythonAvailable, "python3 with plistlib, zlib and sqlite3 is not available to read the caches independently"))
    func builderFlagsMatchCache() throws {
        let folder = try TemporaryFolder("flags-builder")
        let store = folder.path("Media.sqlite")
        var kept = AttributeDescription("title", .string)
        kept.preservesValueOnDeletion = true
        let model = ModelDescription(entities: [
            EntityDescription("Media", attributes: [kept, AttributeDescription("cover", .binaryData, externalStorage: true),
                                                    AttributeDescription("notes", .binaryData)]),
            EntityDescription("Film", parent: "Media", attributes: [AttributeDescription("poster", .binaryData, externalStorage: true)]),
        ], versionIdentifiers: ["1.0.0"])
        let writer = try StoreWriter(url: store, model: model, options: .init(journalMode: .delete))
        try writer.close()
        let expected = try #require(try Self.oracle(store))
        #expect(expected == [Flagged(flag: "preserved", entity: "Media", attribute: "title"), Flagged(flag: "preserved", entity: "Film", attribute: "title"),
                             Flagged(flag: "external", entity: "Media", attribute: "cover"), Flagged(flag: "external", entity: "Film", attribute: "cover"),
                             Flagged(flag: "external", entity: "Film", attribute: "poster")], "\(expected)")
        let result = try CLI.run(["schema", store.path, "--format", "json"])
        #expect(try Self.reported(result.stdout) == expected)
    }
}
