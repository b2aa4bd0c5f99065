import Foundation
import StoreFormats

/// Paths are bytes: a folder pulled from a device may be named in another encoding (`ff fe`),
/// and Swift's `String` cannot hold such a name (it repairs it to U+FFFD, which names nothing).
///
/// Such a folder is opened once by its bytes and then reached through the process's own handle
/// to it (`/proc/self/fd/N/.` on Linux), a UTF-8 path every reader (Foundation, SQLite's VFS,
/// libarchive) can follow, while users see the bytes as typed (`bad\xFF\xFE`). Nothing is
/// created on disk and the handle lives as long as the process. Apple's file systems keep every
/// name UTF-8, so on macOS such a name cannot occur and nothing is aliased.
public enum RawPath {
    /// At most this many folders are aliased in one run; past it, a folder is skipped, saying so.
    public static let limit = 4096

    private static let lock = NSLock()
    nonisolated(unsafe) private static var shownByAlias: [String: String] = [:]

    /// The folder named by `bytes` (absolute, or relative to the current folder), reachable by a
    /// UTF-8 path; nil when it is not a folder that can be opened, or on a platform without
    /// per-process handles as paths. `shown` is how it is named to the user.
    public static func alias(folder bytes: [UInt8], shown: String) -> String? {
        #if os(Linux)
        lock.lock()
        defer { lock.unlock() }
        guard shownByAlias.count < limit else { return nil }
        let fd = (bytes + [0]).withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                open($0, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            }
        }
        guard fd >= 0 else { return nil }
        let alias = "/proc/self/fd/\(fd)/."
        shownByAlias[alias] = shown
        return alias
        #else
        return nil
        #endif
    }

    /// An argument as the process got it, reachable by a UTF-8 path: the folders above its last
    /// component aliased when their names are not UTF-8. Nil when the argument's last component
    /// is itself not UTF-8 (a store's `-wal` and `-shm` are found by its name, which must be
    /// spelt) or its folder cannot be opened.
    public static func argument(_ raw: [UInt8]) -> String? {
        if let valid = String(validating: raw, as: UTF8.self) { return valid }
        var bytes = raw
        while bytes.count > 1, bytes.last == UInt8(ascii: "/") { bytes.removeLast() }
        guard let slash = bytes.lastIndex(of: UInt8(ascii: "/")),
              let last = String(validating: bytes[(slash + 1)...], as: UTF8.self) else { return nil }
        let folder = slash == 0 ? [UInt8(ascii: "/")] : Array(bytes[..<slash])
        guard let alias = alias(folder: folder, shown: HostileText.bytes(folder)) else { return nil }
        return last.isEmpty ? alias : alias + "/" + last
    }

    /// The names in a folder as bytes, `.` and `..` left out; nil when it cannot be read.
    public static func entries(of folder: String) -> [[UInt8]]? {
        guard let directory = opendir(folder) else { return nil }
        defer { closedir(directory) }
        var names: [[UInt8]] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { Array($0.prefix(while: { $0 != 0 })) }
            if name != [UInt8(ascii: ".")] && name != [UInt8(ascii: "."), UInt8(ascii: ".")] { names.append(name) }
        }
        return names
    }

    /// The names in `folder` as (shown, path): a name that is not UTF-8 shown by its bytes, a
    /// folder so named reached through its alias, a file so named left out (nil path).
    public static func children(of folder: String) -> [(shown: String, path: String?)]? {
        entries(of: folder)?.map { raw in
            if let name = String(validating: raw, as: UTF8.self) { return (name, folder + "/" + name) }
            let full = Array(folder.utf8) + [UInt8(ascii: "/")] + raw
            return (HostileText.bytes(raw), isFolder(full) ? alias(folder: full, shown: HostileText.bytes(full)) : nil)
        }
    }

    /// Whether `bytes` name a folder itself (not a link to one).
    public static func isFolder(_ bytes: [UInt8]) -> Bool {
        var st = stat()
        let found = (bytes + [0]).withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) { lstat($0, &st) == 0 }
        }
        return found && st.st_mode & S_IFMT == S_IFDIR
    }

    /// `path` as the user should read it: an aliased folder named by its bytes as typed.
    public static func shown(_ path: String) -> String {
        guard path.hasPrefix("/proc/self/fd/") else { return path }
        lock.lock()
        defer { lock.unlock() }
        for (alias, shown) in shownByAlias where path == alias || path.hasPrefix(alias + "/") {
            return shown + path.dropFirst(alias.count)
        }
        return path
    }

    /// A sentence with every aliased folder in it named by its bytes (for plain-text messages).
    public static func shownInText(_ text: String) -> String {
        guard text.contains("/proc/self/fd/") else { return text }
        lock.lock()
        defer { lock.unlock() }
        // Longest first: /proc/self/fd/12/. is not to be read as /proc/self/fd/1 followed by 2/.
        return shownByAlias.sorted { $0.key.count > $1.key.count }.reduce(text) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
    }

    /// A path from the C library (`realpath`) as a path Swift can open: itself when it is UTF-8,
    /// else its folder aliased. Nil when even that cannot be done.
    public static func fromC(_ pointer: UnsafePointer<CChar>) -> String? {
        argument(Array(UnsafeBufferPointer(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer))))
    }
}
