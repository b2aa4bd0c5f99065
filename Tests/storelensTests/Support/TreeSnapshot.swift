import Acquisition
import Foundation
import StoreFormats
import StoreTestSupport

/// Every entry under a test's root folder — the input, the manifest, the outputs folder, the
/// TMPDIR, whatever else is there — with its type, permission bits, size, SHA-256 (regular files),
/// link target (symbolic links), modification and status-change times. Comparing two snapshots
/// finds any file a command wrote, removed, renamed, re-linked or chmod-ed anywhere in the tree,
/// and (through the folders' mtimes) a file made and removed again in the meantime.
///
/// Walked with lstat: links are recorded, never followed; FIFOs and devices are never opened.
///
/// A snapshot taken `reusing` an earlier one hashes only the files whose inode, size, mtime or
/// ctime differ from it: no write can leave all four as they were (ctime is set by the kernel on
/// every change and cannot be set back), so an unchanged identity means unchanged bytes. A
/// snapshot taken without one hashes every file.
struct TreeSnapshot: Equatable {
    struct Entry: Equatable, CustomStringConvertible {
        let kind: String
        let inode: UInt64
        let mode: UInt32
        let size: Int64
        let sha256: String?
        let linkTarget: String?
        let modified: timespec
        let changed: timespec

        static func == (a: Entry, b: Entry) -> Bool {
            a.sameIdentity(b) && a.sha256 == b.sha256 && a.linkTarget == b.linkTarget
        }

        /// Everything but the bytes: what any write to the file changes.
        func sameIdentity(_ b: Entry) -> Bool {
            kind == b.kind && inode == b.inode && mode == b.mode && size == b.size
                && modified.tv_sec == b.modified.tv_sec && modified.tv_nsec == b.modified.tv_nsec
                && changed.tv_sec == b.changed.tv_sec && changed.tv_nsec == b.changed.tv_nsec
        }

        var description: String {
            "\(kind) \(String(mode, radix: 8)) \(size) bytes\(sha256.map { " sha256 \($0.prefix(12))" } ?? "")"
                + "\(linkTarget.map { " → \($0)" } ?? "") mtime \(modified.tv_sec).\(modified.tv_nsec) ctime \(changed.tv_sec).\(changed.tv_nsec)"
        }
    }

    /// Relative path ("." for the root itself) → entry.
    let entries: [String: Entry]

    init(_ root: URL, reusing earlier: TreeSnapshot? = nil) throws {
        var entries: [String: Entry] = [:]
        func visit(_ path: String, relative: String) throws {
            var st = stat()
            guard lstat(path, &st) == 0 else { throw CocoaError(.fileReadUnknown, userInfo: [NSFilePathErrorKey: path]) }
            let type = st.st_mode & S_IFMT
            var kind = "other", sha: String?, link: String?
            switch type {
            case S_IFREG:
                kind = "file"
            case S_IFDIR: kind = "folder"
            case S_IFLNK:
                kind = "link"
                link = try FileManager.default.destinationOfSymbolicLink(atPath: path)
            case S_IFIFO: kind = "fifo"
            default: break
            }
            #if os(Linux)
            let modified = st.st_mtim, changed = st.st_ctim
            #else
            let modified = st.st_mtimespec, changed = st.st_ctimespec
            #endif
            var entry = Entry(kind: kind, inode: UInt64(st.st_ino), mode: UInt32(st.st_mode) & 0o7777, size: Int64(st.st_size), sha256: nil,
                              linkTarget: link, modified: modified, changed: changed)
            if type == S_IFREG {
                if let was = earlier?.entries[relative], was.sha256 != nil, was.sameIdentity(entry) {
                    sha = was.sha256
                } else {
                    sha = try SHA256.hexOfFile(at: URL(fileURLWithPath: path))
                }
                entry = Entry(kind: kind, inode: entry.inode, mode: entry.mode, size: entry.size, sha256: sha, linkTarget: nil,
                              modified: modified, changed: changed)
            }
            entries[relative] = entry
            if type == S_IFDIR {
                // Read as bytes: a folder named in another encoding is walked through its alias.
                guard let children = RawPath.children(of: path) else { throw CocoaError(.fileReadUnknown, userInfo: [NSFilePathErrorKey: path]) }
                for (name, child) in children {
                    guard let child else { throw CocoaError(.fileReadUnknown, userInfo: [NSFilePathErrorKey: path + "/" + name]) }
                    try visit(child, relative: relative == "." ? name : relative + "/" + name)
                }
            }
        }
        try visit(root.path, relative: ".")
        self.entries = entries
    }

    /// What differs from `earlier`, one line each (empty when nothing does), leaving out what
    /// `ignoring` says may change: the entries under (not including) the folders it names, and
    /// the times of those folders themselves (a command writes its output there; scratch comes
    /// and goes in TMPDIR).
    func differences(from earlier: TreeSnapshot, ignoringInside folders: Set<String> = []) -> [String] {
        func ignored(_ path: String) -> Bool { folders.contains { path.hasPrefix($0 + "/") } }
        var lines: [String] = []
        for path in Set(entries.keys).union(earlier.entries.keys).sorted() where !ignored(path) {
            switch (earlier.entries[path], entries[path]) {
            case (nil, let now?): lines.append("new: \(path) (\(now))")
            case (let was?, nil): lines.append("gone: \(path) (was \(was))")
            case (let was?, let now?) where was != now:
                if folders.contains(path), was.kind == now.kind, was.mode == now.mode { continue }
                lines.append("changed: \(path): \(was) → \(now)")
            default: break
            }
        }
        return lines
    }

    /// The entries directly or deeper inside `folder` (a relative path), relative to it.
    func contents(of folder: String) -> [String] {
        entries.keys.filter { $0.hasPrefix(folder + "/") }.map { String($0.dropFirst(folder.count + 1)) }.sorted()
    }
}
