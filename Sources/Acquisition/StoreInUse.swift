import Foundation

/// Whether another process has a store open or is writing it, from the locks SQLite takes
/// (`fcntl` record locks, which every process sees): in WAL mode the `-shm`'s write lock (byte
/// 120) and the lock every open connection holds (byte 128); in rollback mode the main file's
/// RESERVED and PENDING bytes. Asked with `F_GETLK`, which takes no lock and changes nothing; the
/// files are opened read-only. A store in use may change while it is read: the run says so at
/// once, and its closing check names any file that did change (exit 3).
public enum StoreInUse {
    /// One sentence for the user, or nil when no other process holds a lock on the store.
    public static func notice(_ family: StoreFamily, displayPath: String) -> String? {
        if let shm = family.shm {
            if let pid = holder(shm.path, start: 120, length: 1) {
                return "\(displayPath) is being written by another process (pid \(pid) holds its WAL write lock): what is read may change while storelens reads it; quit the app and copy the store again"
            }
            if let pid = holder(shm.path, start: 128, length: 1) {
                return "\(displayPath) is open in another process (pid \(pid)): it may write while storelens reads it; quit the app first"
            }
        }
        // SQLite's lock bytes at 1 GiB: PENDING, RESERVED, then the shared range.
        if let pid = holder(family.main.path, start: 0x4000_0000, length: 2) {
            return "\(displayPath) is being written by another process (pid \(pid) holds its write lock): what is read may change while storelens reads it; quit the app and copy the store again"
        }
        return nil
    }

    /// The pid of a process holding any lock on the byte range, or nil.
    static func holder(_ path: String, start: Int64, length: Int64) -> Int32? {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var probe = flock()
        probe.l_type = Int16(F_WRLCK)
        probe.l_whence = Int16(SEEK_SET)
        probe.l_start = off_t(start)
        probe.l_len = off_t(length)
        guard fcntl(fd, F_GETLK, &probe) == 0, probe.l_type != Int16(F_UNLCK) else { return nil }
        return probe.l_pid
    }
}
