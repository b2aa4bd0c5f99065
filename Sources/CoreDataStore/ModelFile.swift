import Foundation
import StoreFormats

/// A file of the developer's model (`--model`: a `.mom`, an `.xcdatamodel`'s `contents` or
/// `elements`, a version marker), read with the cache's bounds: size checked before a byte is
/// read, nothing but a regular file opened (`SmallFile`). The path is the developer's own, so a
/// link in it is followed first, as Xcode would; the file it names is then read as any other.
enum ModelFile {
    /// A version marker (`VersionInfo.plist`, `.xccurrentversion`) is a few hundred bytes.
    static let markerLimit = 1 << 20

    /// - Parameter what: the file as a sentence names it ("the contents file").
    static func read(_ file: URL, what: String, limit: Int) throws(ModelError) -> Data {
        let resolved = file.resolvingSymlinksInPath()
        do {
            return try SmallFile.contents(of: resolved, limit: limit)
        } catch .tooLarge(let size, let limit) {
            throw .xcodeModelUnreadable(path: file.path, detail: "\(what) is \(size) bytes, above the \(limit)-byte limit")
        } catch {
            throw .xcodeModelUnreadable(path: file.path, detail: "cannot read \(what): \(error)")
        }
    }

    /// A version marker's plist, or nil when there is none or it cannot be read (the caller then
    /// picks a version by name and says so).
    static func marker(_ file: URL) -> [String: Any]? {
        guard let data = try? read(file, what: "the version marker", limit: markerLimit) else { return nil }
        return (try? PropertyListSerialization.propertyList(from: data, format: nil)) as? [String: Any]
    }
}
