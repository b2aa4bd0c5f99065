import Foundation

/// Where the files a SARIF log points at lie, asked of the disk here so that the log's renderer
/// (`SARIF`, in Reports) reads none: the working folder (the log's `SRCROOT`), the file a store's
/// display path is in, the input a store named relative to it is found through, and a file's
/// resolved path for the results' fingerprints. A command makes one with its inputs as given.
public struct SARIFPlaces: Sendable {
    /// The working folder, as the process has it: relative artifact paths are relative to it.
    public let workingFolder: String
    /// The inputs as given: a store found in a folder input is named relative to that folder.
    public let inputs: [String]

    public init(inputs: [String], workingFolder: String = FileManager.default.currentDirectoryPath) {
        self.inputs = inputs
        self.workingFolder = workingFolder
    }

    /// A store by its display path: a store inside an archive (`archive!path/inside`) is located
    /// at the archive, the file a reviewer can open. A `!` is also a folder name's own character
    /// (`bang!dir/default.store`): the archive is the first prefix before a `!` that is a regular
    /// file, and a path with none is the store's own.
    public func store(_ displayPath: String) -> String {
        let parts = displayPath.split(separator: "!", omittingEmptySubsequences: false)
        var prefix = ""
        for (i, part) in parts.dropLast().enumerated() {
            prefix += (i == 0 ? "" : "!") + part
            var info = stat()
            if stat(prefix, &info) == 0, info.st_mode & S_IFMT == S_IFREG { return prefix }
        }
        return displayPath
    }

    /// Where a located path is on disk: as it is when that exists (relative to the working
    /// folder, or absolute); else the first folder input holding it (a store found in a folder is
    /// named relative to that folder, as every view shows it); else a backup input; else as it is.
    public func onDisk(_ path: String) -> String {
        var info = stat()
        if stat(path, &info) == 0 { return path }
        for input in inputs {
            guard stat(input, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { continue }
            let joined = (input.hasSuffix("/") ? input : input + "/") + path
            if stat(joined, &info) == 0 { return joined }
        }
        // A backup names its stores by domain and path, not by the files that hold them (named
        // by their hashes): the backup folder is the place a reviewer can open.
        for input in inputs {
            let manifest = (input.hasSuffix("/") ? input : input + "/") + "Manifest.db"
            if stat(manifest, &info) == 0 { return input }
        }
        return path
    }

    /// `path` resolved (links, `..`) and made relative to the resolved working folder when inside it.
    public func canonical(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return path }
        defer { free(resolved) }
        let full = String(cString: resolved)
        guard let cwd = realpath(".", nil) else { return full }
        defer { free(cwd) }
        let root = String(cString: cwd)
        let prefix = root.hasSuffix("/") ? root : root + "/"
        return full.hasPrefix(prefix) ? String(full.dropFirst(prefix.count)) : full
    }
}
