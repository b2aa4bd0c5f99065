import Foundation
import StoreTestSupport

/// A small tmpfs to use as TMPDIR, mounted for one test and unmounted after. Only root can
/// mount; elsewhere the tests that need one are skipped with the reason.
final class SmallTmpfs {
    let folder: TemporaryFolder
    var url: URL { folder.url }

    init(bytes: Int, readOnly: Bool = false) throws {
        folder = try TemporaryFolder("tmpfs")
        let options = "size=\(bytes),mode=0700" + (readOnly ? ",ro" : "")
        guard Self.run("/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", folder.url.path]) == 0 else {
            throw CocoaError(.fileWriteNoPermission)
        }
    }

    deinit { _ = Self.run("/bin/umount", [folder.url.path]) }

    /// Whether this process may mount a tmpfs (root, and a kernel that lets it).
    static let available: Bool = {
        guard geteuid() == 0, FileManager.default.isExecutableFile(atPath: "/bin/mount") else { return false }
        return (try? SmallTmpfs(bytes: 64 * 1024)) != nil
    }()
    static let unavailable = "mounting a tmpfs needs root and mount(8): a full TMPDIR cannot be made here"

    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// A folder bind-mounted read-only over another (`mount --bind`, then `remount,bind,ro`): what a
/// mounted image or a write-blocked extraction looks like to storelens. Unmounted when released.
final class ReadOnlyBind {
    let folder: TemporaryFolder
    var url: URL { folder.url }

    init(of source: URL) throws {
        folder = try TemporaryFolder("ro-bind")
        guard SmallTmpfs.run("/bin/mount", ["--bind", source.path, folder.url.path]) == 0 else { throw CocoaError(.fileWriteNoPermission) }
        guard SmallTmpfs.run("/bin/mount", ["-o", "remount,bind,ro", folder.url.path]) == 0 else {
            SmallTmpfs.run("/bin/umount", [folder.url.path])
            throw CocoaError(.fileWriteNoPermission)
        }
    }

    deinit { SmallTmpfs.run("/bin/umount", [folder.url.path]) }
}
