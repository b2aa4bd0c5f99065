import Foundation
import StoreFormats

/// Reads a compiled Core Data model from an app bundle: a `.mom` file (the `NSManagedObjectModel`
/// as an `NSKeyedArchiver` binary plist, the same graph `Z_MODELCACHE` holds without the DEFLATE
/// layer) or a `.momd` folder (the version its `VersionInfo.plist` names as current).
///
/// A bundle's model is the developer's, not evidence, but it is parsed with the cache's bounds.
public enum CompiledModelReader {
    public static let maxBytes = 64 << 20

    public static func read(_ url: URL) throws(ModelError) -> StoreModel {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
            throw .xcodeModelUnreadable(path: url.path, detail: "no such file or folder")
        }
        var notes: [String] = []
        var file = url
        var origin = url.lastPathComponent
        if isDirectory.boolValue {
            let name = try currentVersion(of: url, notes: &notes)
            file = url.appendingPathComponent(name)
            origin += "/" + name
        }
        let data = try ModelFile.read(file, what: "the compiled model", limit: maxBytes)
        var model = try decode(data, path: file.path)
        model.origin = origin
        model.notes = notes + model.notes
        return model
    }

    /// Decodes the keyed archive of a `.mom`.
    public static func decode(_ data: Data, path: String) throws(ModelError) -> StoreModel {
        let archive: KeyedArchive
        do {
            archive = try KeyedArchive(data: data)
        } catch {
            throw .xcodeModelUnreadable(path: path, detail: "not a compiled model (keyed archive: \(error))")
        }
        do {
            var walker = ArchivedModelWalker(archive: archive)
            var model = try walker.model()
            model.source = .compiled
            return model
        } catch let error as ModelError {
            throw error
        } catch {
            throw .xcodeModelUnreadable(path: path, detail: "archived model: \(error)")
        }
    }

    /// The `.mom` inside a `.momd` to read: `NSManagedObjectModel_CurrentVersionName` of its
    /// `VersionInfo.plist`, else the only (or last by name) `.mom`.
    static func currentVersion(of bundle: URL, notes: inout [String]) throws(ModelError) -> String {
        let moms = ((try? FileManager.default.contentsOfDirectory(atPath: bundle.path)) ?? []).filter { $0.hasSuffix(".mom") }.sorted()
        if let plist = ModelFile.marker(bundle.appendingPathComponent("VersionInfo.plist")),
           let name = plist["NSManagedObjectModel_CurrentVersionName"] as? String {
            let file = name.hasSuffix(".mom") ? name : name + ".mom"
            guard !file.contains("/"), moms.contains(file) else {
                throw .xcodeModelUnreadable(path: bundle.path, detail: "VersionInfo.plist names \"\(name)\", which is not a .mom in this folder")
            }
            if moms.count > 1 { notes.append("\(bundle.lastPathComponent) holds \(moms.count) versions; read the current one, \(file)") }
            return file
        }
        guard let last = moms.last else { throw .xcodeModelUnreadable(path: bundle.path, detail: "no .mom inside") }
        if moms.count > 1 { notes.append("\(bundle.lastPathComponent) has no readable VersionInfo.plist; read \(last), the last of \(moms.count) by name") }
        return last
    }
}
