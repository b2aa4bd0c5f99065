import Foundation

/// Writes a `ModelDescription` as a compiled model, the `.mom` Xcode puts in an app bundle: the
/// same keyed archive of `NSManagedObjectModel` the store builder caches in `Z_MODELCACHE`,
/// without the DEFLATE layer. For testing targets given as `.mom`/`.momd`.
public enum CompiledModelWriter {
    public static func data(_ model: ModelDescription) throws -> Data {
        try ModelCacheArchive.archive(model, layout: StoreLayout(model: model))
    }

    /// Writes `<bundle>.momd/<name>.mom` and a `VersionInfo.plist` naming it current. Returns the `.momd`.
    @discardableResult
    public static func writeBundle(_ model: ModelDescription, name: String = "Model", to bundle: URL) throws -> URL {
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        try data(model).write(to: bundle.appendingPathComponent("\(name).mom"))
        let plist = """
            <?xml version="1.0" encoding="UTF-8"?>
            <plist version="1.0"><dict><key>NSManagedObjectModel_CurrentVersionName</key><string>\(name)</string></dict></plist>

            """
        try Data(plist.utf8).write(to: bundle.appendingPathComponent("VersionInfo.plist"))
        return bundle
    }
}
