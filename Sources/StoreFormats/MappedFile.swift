import CMappedFileGuard
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file mapped read-only into memory: a working copy of a store, or an original read in place
/// (guarded against another process cutting it short: `pagesReadPastEnd`). Its bytes are read on
/// demand, and the pages read can be given back.
///
/// Why: the WAL analysis walks a store's every b-tree page and checksums every WAL frame. Read
/// into memory, a 250 MB main file and a 115 MB WAL made a 400 MB process; mapped, the pages read
/// would stay resident all the same. `releaseResidentPages()` tells the kernel the process no
/// longer needs the pages it has read (`MADV_DONTNEED`): they stay in the page cache, are read
/// again from it if touched again, and no longer count against the process. Readers that walk
/// through a large file call `MappedFile.noteBytesRead(_:)`; every `releaseInterval` bytes, every
/// live mapping is released, so memory stays bounded whatever the store's size. Only files nothing
/// writes while they are mapped: a copy SQLite may change (a hot journal rolled back) is read.
public enum MappedFile {
    /// The bytes of the file at `path`, mapped read-only without a copy; the mapping is undone
    /// when the last `Data` sharing it is gone. An empty file gives empty data.
    ///
    /// - Throws: `MappedFileError` with the `errno` of the failing call.
    public static func map(path: String) throws(MappedFileError) -> Data {
        // No link followed, no FIFO waited for: read in place, the file may be evidence.
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw MappedFileError(path: path, code: errno) }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw MappedFileError(path: path, code: errno) }
        let length = Int(info.st_size)
        guard length > 0 else { return Data() }
        guard let mapped = mmap(nil, length, PROT_READ, MAP_PRIVATE, fd, 0), mapped != MAP_FAILED else {
            throw MappedFileError(path: path, code: errno)
        }
        registry.add(mapped, length, path: path)
        return Data(bytesNoCopy: mapped, count: length, deallocator: .custom { pointer, count in
            registry.remove(pointer, count)
        })
    }

    /// Pages read past the end of a mapped file since the process started: the file was cut short
    /// by another process while mapped (a store read in place that an app still writes). Each such
    /// read got zeros instead of ending the process (`CMappedFileGuard`); the session that read
    /// the file reports it as changed (`cutShort(among:)`).
    public static var pagesReadPastEnd: Int64 { Int64(storelens_mapping_guard_faults()) }

    /// Which of `paths` were mapped and read past their end (cut short by another process while
    /// mapped), whether their mappings are still live or gone.
    public static func cutShort(among paths: Set<String>) -> Set<String> {
        registry.cutShort().intersection(paths)
    }

    // MARK: - Bounding what every mapping holds

    /// Bytes read through mappings between two releases (2 MiB: with `recover` carving on a second
    /// thread, two readers' 8 MiB each were a tenth of its peak; a release is one `madvise` per
    /// mapping, and what is read again comes from the page cache). Only for reading through a file
    /// in order: one page read here and there can map megabytes around it (the page cache holds
    /// large folios, and a fault maps the whole folio), so readers that jump from page to page
    /// read with `pread` instead (`PageOwnershipTracker` given file paths).
    public static let releaseInterval = 2 << 20

    /// Counts `count` bytes read through a mapping; every `releaseInterval` bytes, the pages read
    /// of every live mapping are given back.
    public static func noteBytesRead(_ count: Int) {
        if registry.note(count) { registry.releaseAll() }
    }

    /// Gives back the pages read of every live mapping now, for a reader done with a pass over
    /// them (what it read since the last release would otherwise stay resident until the next one).
    public static func releaseResidentPages() {
        registry.releaseAll()
    }

    /// The live mappings, by address; `madvise` and `munmap` run under its lock, so a mapping is
    /// never advised after it is gone.
    private static let registry = Registry()

    private final class Registry: @unchecked Sendable {
        private let lock = NSLock()
        private var live: [UnsafeMutableRawPointer: Int] = [:]
        private var paths: [UnsafeMutableRawPointer: String] = [:]
        /// Files whose mappings, now gone, were read past their end.
        private var wereCutShort: Set<String> = []
        private var sinceRelease = 0

        func add(_ base: UnsafeMutableRawPointer, _ length: Int, path: String) {
            lock.withLock {
                live[base] = length
                paths[base] = path
            }
            _ = storelens_mapping_guard_add(base, length)
        }

        func remove(_ base: UnsafeMutableRawPointer, _ length: Int) {
            lock.withLock {
                live[base] = nil
                if storelens_mapping_guard_remove(base) > 0, let path = paths[base] { wereCutShort.insert(path) }
                paths[base] = nil
                munmap(base, length)
            }
        }

        func cutShort() -> Set<String> {
            lock.withLock {
                wereCutShort.union(paths.filter { storelens_mapping_guard_faults_at($0.key) > 0 }.map(\.value))
            }
        }

        func note(_ count: Int) -> Bool {
            lock.withLock {
                sinceRelease &+= count
                guard sinceRelease >= MappedFile.releaseInterval else { return false }
                sinceRelease = 0
                return true
            }
        }

        func releaseAll() {
            lock.withLock {
                for (base, length) in live { _ = madvise(base, length, MADV_DONTNEED) }
                sinceRelease = 0
            }
        }
    }
}

/// A working copy could not be mapped.
public struct MappedFileError: Error, Sendable, CustomStringConvertible {
    public let path: String
    public let code: Int32
    public var description: String { "\(path) cannot be mapped into memory: \(String(cString: strerror(code)))" }
}
