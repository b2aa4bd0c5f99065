import Foundation

/// Builds an in-memory database image: the main file with a WAL's committed
/// frames applied, ready for `sqlite3_deserialize`.
///
/// This is how an inspector reads a store exactly as SQLite would, or as it
/// stood after any earlier commit, without opening the evidence files, so
/// no `-shm` is rewritten and no checkpoint can happen.
///
/// The image always has header bytes 18/19 set to 1 (rollback journal):
/// SQLite's in-memory VFS has no WAL support and refuses a WAL-mode image.
///
/// For example:
/// ```swift
/// let wal = WAL(data: walBytes)
/// let image = try DatabaseImage.make(mainFile: mainBytes, wal: wal, walData: walBytes)
/// let mainOnly = try DatabaseImage.make(mainFile: mainBytes)
/// ```
public enum DatabaseImage {
    /// The default upper bound on an image's size (4 GiB, or `Int.max` where
    /// `Int` is narrower), so a hostile commit size cannot exhaust memory.
    public static let defaultMaxBytes = Int(clamping: Int64(4) << 30)

    /// Builds the image.
    ///
    /// - Parameters:
    ///   - mainFile: The main database file's bytes. May be empty when a WAL
    ///     holds the whole database (a store that was never checkpointed).
    ///   - wal: The parsed WAL, or nil for the main-file-only view. A WAL whose
    ///     header SQLite would ignore is ignored here too.
    ///   - walData: The bytes `wal` was parsed from; required when the WAL has frames to apply.
    ///   - upToCommit: Apply the WAL only up to its n-th commit (1-based);
    ///     nil means up to the last valid commit, as SQLite would.
    ///   - maxBytes: Refuse to build an image larger than this.
    /// - Throws: `DatabaseImageError`.
    public static func make(
        mainFile: Data, wal: WAL? = nil, walData: Data? = nil, upToCommit: Int? = nil,
        maxBytes: Int = defaultMaxBytes
    ) throws(DatabaseImageError) -> Data {
        let layout = try Layout.of(mainFile: mainFile, wal: wal, walData: walData, upToCommit: upToCommit, maxBytes: maxBytes)
        guard let walData, layout.applied != nil else { return try mainFileOnly(mainFile, upToCommit: upToCommit, maxBytes: maxBytes) }
        let (size, pageSize, pages) = (layout.size, layout.pageSize, layout.pages)

        var image = Data(mainFile.prefix(size))
        if image.count < size { image.append(Data(count: size - image.count)) }

        image.withUnsafeMutableBytes { (destination: UnsafeMutableRawBufferPointer) in
            walData.withUnsafeBytes { (source: UnsafeRawBufferPointer) in
                // In the WAL's own order: frames read in hash order faulted in the pages around
                // each one (large folios), so the whole mapped -wal stayed resident between releases.
                for (target, from) in layout.copies(walBytes: source.count).sorted(by: { $0.1 < $1.1 }) {
                    UnsafeMutableRawBufferPointer(rebasing: destination[target ..< target + pageSize])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[from ..< from + pageSize]))
                }
            }
        }

        do { _ = try DatabaseHeader(data: image) } catch { throw .imageHeaderInvalid(error) }
        patchToRollbackMode(&image)
        setInHeaderPageCount(&image, UInt32(truncatingIfNeeded: pages))
        return image
    }

    /// Writes the same image as `make` to a new file at `path` (created with
    /// `O_CREAT|O_EXCL|O_NOFOLLOW`, mode 0600), a page at a time: a large store's image then
    /// needs disk in the caller's working folder, not memory. A file left half-written is removed.
    ///
    /// - Parameter sources: the files `mainFile` and `walData` were mapped from, when they were:
    ///   their pages are then read with `pread`, through the page cache, and never become resident
    ///   in the process (read through the mappings, a whole image's worth of them could be at once,
    ///   between two releases, a third of `recover`'s peak on the bench corpus).
    public static func write(
        toNewFile path: String, mainFile: Data, wal: WAL? = nil, walData: Data? = nil, upToCommit: Int? = nil,
        maxBytes: Int = defaultMaxBytes, sources: (main: String?, wal: String?) = (nil, nil)
    ) throws(DatabaseImageError) {
        let layout = try Layout.of(mainFile: mainFile, wal: wal, walData: walData, upToCommit: upToCommit, maxBytes: maxBytes)
        // Read-write: the header is read back to be checked and patched once every page is in place.
        let fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .writeFailed(path: path, code: errno, bytes: layout.size) }
        var failed = true
        defer {
            close(fd)
            if failed { unlink(path) }
        }
        let image = ImageFile(fd: fd, path: path, size: layout.size)
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        // The main file's pages up to the image's size, then zeros (a hole) for the rest.
        try writeMainPages(mainFile, upTo: min(layout.size, mainFile.count), from: sources.main, into: image, buffer: buffer)
        if ftruncate(fd, off_t(layout.size)) != 0 { throw .writeFailed(path: path, code: errno, bytes: layout.size) }
        if let walData, layout.applied != nil {
            try writeWALPages(walData, layout: layout, from: sources.wal, into: image, buffer: buffer)
        }
        // What was read through a mapping is given back: the image is read by SQLite from its file.
        MappedFile.releaseResidentPages()
        try finishHeader(of: image, layout: layout)
        failed = false
    }

    /// The image file being written, and how to name it in errors.
    private struct ImageFile {
        let fd: Int32
        let path: String
        /// The image's size, named in a write error (how much disk it needs).
        let size: Int

        /// Writes all of `bytes` at `offset`.
        func put(_ bytes: UnsafeRawBufferPointer, at offset: Int) throws(DatabaseImageError) {
            let code = FileTransfer.all(bytes.count, at: offset) { pwrite(fd, bytes.baseAddress! + $0, bytes.count - $0, $1) }
            if code != 0 { throw .writeFailed(path: path, code: code, bytes: size) }
        }
    }

    /// Bytes of a source file at `offset` into `buffer`, all of them (a short file is an I/O error).
    private static func read(_ source: (fd: Int32, path: String), _ buffer: UnsafeMutableRawBufferPointer, at offset: Int) throws(DatabaseImageError) {
        let code = FileTransfer.all(buffer.count, at: offset) { pread(source.fd, buffer.baseAddress! + $0, buffer.count - $0, $1) }
        if code != 0 { throw .sourceReadFailed(path: source.path, code: code) }
    }

    private static func openSource(_ file: String) throws(DatabaseImageError) -> (fd: Int32, path: String) {
        let source = open(file, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard source >= 0 else { throw .sourceReadFailed(path: file, code: errno) }
        return (source, file)
    }

    /// The main file's first `fromMain` bytes, a buffer at a time: read with `pread` from the file
    /// it was mapped from when there is one, else copied from the mapping.
    private static func writeMainPages(_ mainFile: Data, upTo fromMain: Int, from file: String?, into image: ImageFile,
                                       buffer: UnsafeMutableRawBufferPointer) throws(DatabaseImageError) {
        if let file {
            let source = try openSource(file)
            defer { close(source.fd) }
            var offset = 0
            while offset < fromMain {
                let part = UnsafeMutableRawBufferPointer(rebasing: buffer[0 ..< min(buffer.count, fromMain - offset)])
                try read(source, part, at: offset)
                try image.put(UnsafeRawBufferPointer(part), at: offset)
                offset += part.count
            }
            return
        }
        var result: Result<Void, DatabaseImageError> = .success(())
        mainFile.withUnsafeBytes { (main: UnsafeRawBufferPointer) in
            var offset = 0
            while offset < fromMain {
                let count = min(1 << 20, fromMain - offset)
                do throws(DatabaseImageError) { try image.put(UnsafeRawBufferPointer(rebasing: main[offset ..< offset + count]), at: offset) } catch {
                    result = .failure(error)
                    return
                }
                offset += count
                MappedFile.noteBytesRead(count)
            }
        }
        try result.get()
    }

    /// The applied commit's WAL frames over the main file's pages, in the WAL's own order (as
    /// `make` reads them): with `pread` from the WAL's file when there is one, else from the mapping.
    private static func writeWALPages(_ walData: Data, layout: Layout, from file: String?, into image: ImageFile,
                                      buffer: UnsafeMutableRawBufferPointer) throws(DatabaseImageError) {
        if let file, layout.pageSize <= buffer.count {
            let source = try openSource(file)
            defer { close(source.fd) }
            let page = UnsafeMutableRawBufferPointer(rebasing: buffer[0 ..< layout.pageSize])
            for (target, from) in layout.copies(walBytes: walData.count).sorted(by: { $0.1 < $1.1 }) {
                try read(source, page, at: from)
                try image.put(UnsafeRawBufferPointer(page), at: target)
            }
            return
        }
        var result: Result<Void, DatabaseImageError> = .success(())
        walData.withUnsafeBytes { (source: UnsafeRawBufferPointer) in
            for (target, from) in layout.copies(walBytes: source.count).sorted(by: { $0.1 < $1.1 }) {
                do throws(DatabaseImageError) { try image.put(UnsafeRawBufferPointer(rebasing: source[from ..< from + layout.pageSize]), at: target) } catch {
                    result = .failure(error)
                    return
                }
                MappedFile.noteBytesRead(layout.pageSize)
            }
        }
        try result.get()
    }

    /// The header as `make` leaves it: read back, checked, switched to rollback mode, its page count set.
    private static func finishHeader(of image: ImageFile, layout: Layout) throws(DatabaseImageError) {
        var header = Data(count: DatabaseHeader.length)
        let read = header.withUnsafeMutableBytes { pread(image.fd, $0.baseAddress!, DatabaseHeader.length, 0) }
        if layout.applied != nil {
            do { _ = try DatabaseHeader(data: header.prefix(max(0, read))) } catch { throw .imageHeaderInvalid(error) }
        }
        guard read == DatabaseHeader.length else { throw .writeFailed(path: image.path, code: EIO, bytes: layout.size) }
        patchToRollbackMode(&header)
        if layout.applied != nil { setInHeaderPageCount(&header, UInt32(truncatingIfNeeded: layout.pages)) }
        let written = header.withUnsafeBytes { pwrite(image.fd, $0.baseAddress!, DatabaseHeader.length, 0) }
        guard written == DatabaseHeader.length else { throw .writeFailed(path: image.path, code: written < 0 ? errno : EIO, bytes: layout.size) }
    }

    /// What an image is made of: its size, and which WAL frame supplies which page.
    private struct Layout {
        var size: Int
        var pageSize: Int
        var pages: Int
        /// The commit applied, or nil for the main file alone.
        var applied: Int?
        var latest: [UInt32: WALFrame] = [:]

        /// Validates as `make` always has; `applied` is nil when the main file alone is the image.
        static func of(mainFile: Data, wal: WAL?, walData: Data?, upToCommit: Int?, maxBytes: Int) throws(DatabaseImageError) -> Layout {
            // No WAL, or one SQLite silently ignores (bad magic, size or checksum).
            guard let wal, wal.headerProblem?.sqliteIgnoresWAL != true else {
                return try mainOnly(mainFile, upToCommit: upToCommit, maxBytes: maxBytes)
            }
            if let problem = wal.headerProblem { throw .walRejected(problem) }
            guard let walPageSize = wal.pageSize else { throw .walRejected(.invalidPageSize(wal.header?.rawPageSize ?? 0)) }

            // An empty main file is legitimate: the WAL may hold every page.
            var mainHeader: DatabaseHeader?
            if !mainFile.isEmpty {
                do { mainHeader = try DatabaseHeader(data: mainFile) } catch { throw .mainFile(error) }
            }
            if let mainHeader, mainHeader.pageSize != walPageSize {
                throw .pageSizeMismatch(mainFile: mainHeader.pageSize, wal: walPageSize)
            }

            let available = wal.transactions.count
            let transaction: WALTransaction
            if let upToCommit {
                guard upToCommit >= 1, upToCommit <= available else {
                    throw .commitOutOfRange(requested: upToCommit, available: available)
                }
                transaction = wal.transactions[upToCommit - 1]
            } else if let last = wal.transactions.last {
                transaction = last
            } else {
                // Nothing committed: readers see the main file alone.
                return try mainOnly(mainFile, upToCommit: nil, maxBytes: maxBytes)
            }

            guard let walData else { throw .walDataMissing }
            guard walData.count == wal.fileSize, WALHeader(walData) == wal.header else {
                throw .walDataMismatch(parsedLength: wal.fileSize, givenLength: walData.count)
            }

            let pages = transaction.databaseSizeInPages
            let (size, overflow) = pages.multipliedReportingOverflow(by: walPageSize)
            guard !overflow, size <= maxBytes else {
                throw .imageTooLarge(bytes: overflow ? Int.max : size, limit: maxBytes)
            }
            return Layout(size: size, pageSize: walPageSize, pages: pages, applied: transaction.number,
                          latest: wal.latestFrames(upToCommit: transaction.number))
        }

        private static func mainOnly(_ mainFile: Data, upToCommit: Int?, maxBytes: Int) throws(DatabaseImageError) -> Layout {
            if let upToCommit { throw .commitOutOfRange(requested: upToCommit, available: 0) }
            let header: DatabaseHeader
            do { header = try DatabaseHeader(data: mainFile) } catch { throw .mainFile(error) }
            guard mainFile.count <= maxBytes else {
                throw .imageTooLarge(bytes: mainFile.count, limit: maxBytes)
            }
            return Layout(size: mainFile.count, pageSize: header.pageSize, pages: mainFile.count / max(1, header.pageSize), applied: nil)
        }

        /// (offset in the image, offset in the WAL) of every page a frame supplies.
        func copies(walBytes: Int) -> [(Int, Int)] {
            latest.compactMap { pageNumber, frame in
                // Pages past the committed size were truncated away by that commit.
                let pageIndex = Int(pageNumber) - 1
                guard pageIndex >= 0, pageIndex < pages else { return nil }
                let target = pageIndex * pageSize
                guard frame.pageOffset >= 0, frame.pageOffset <= walBytes - pageSize,
                      target <= size - pageSize else { return nil }
                return (target, frame.pageOffset)
            }
        }
    }

    /// The main file as SQLite sees it without a WAL, patched to rollback mode.
    private static func mainFileOnly(
        _ mainFile: Data, upToCommit: Int?, maxBytes: Int
    ) throws(DatabaseImageError) -> Data {
        if let upToCommit { throw .commitOutOfRange(requested: upToCommit, available: 0) }
        do { _ = try DatabaseHeader(data: mainFile) } catch { throw .mainFile(error) }
        guard mainFile.count <= maxBytes else {
            throw .imageTooLarge(bytes: mainFile.count, limit: maxBytes)
        }
        var image = Data(mainFile)
        patchToRollbackMode(&image)
        return image
    }

    /// Sets the file format write/read versions (bytes 18/19) to 1, so an
    /// in-memory database does not look for a WAL.
    private static func patchToRollbackMode(_ image: inout Data) {
        guard image.count >= DatabaseHeader.length else { return }
        let start = image.startIndex
        image[start + 18] = 1
        image[start + 19] = 1
    }

    /// Writes the in-header database size (offset 28, big-endian) so it
    /// agrees with the image's length.
    private static func setInHeaderPageCount(_ image: inout Data, _ pages: UInt32) {
        guard image.count >= DatabaseHeader.length else { return }
        let start = image.startIndex
        image[start + 28] = UInt8(truncatingIfNeeded: pages >> 24)
        image[start + 29] = UInt8(truncatingIfNeeded: pages >> 16)
        image[start + 30] = UInt8(truncatingIfNeeded: pages >> 8)
        image[start + 31] = UInt8(truncatingIfNeeded: pages)
    }
}

/// Why a database image could not be built.
public enum DatabaseImageError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The main file's header is unreadable.
    case mainFile(DatabaseHeaderError)
    /// The WAL's header makes SQLite refuse the database (an unsupported format version).
    case walRejected(WALHeaderProblem)
    /// The WAL's page size differs from the main file's, so they cannot belong together.
    case pageSizeMismatch(mainFile: Int, wal: Int)
    /// A WAL with frames to apply was given without the bytes it was parsed from.
    case walDataMissing
    /// The WAL bytes given are not the ones the `WAL` value was parsed from.
    case walDataMismatch(parsedLength: Int, givenLength: Int)
    /// The requested commit does not exist among the WAL's valid commits.
    case commitOutOfRange(requested: Int, available: Int)
    /// The image would be larger than the caller's limit.
    case imageTooLarge(bytes: Int, limit: Int)
    /// After applying the WAL, page 1 is not a valid SQLite header (e.g. an
    /// empty main file and a WAL that never wrote page 1).
    case imageHeaderInvalid(DatabaseHeaderError)
    /// The image (of `bytes` bytes) could not be written to a file: our own failure, with the
    /// errno that says why (ENOSPC: the working folder is full).
    case writeFailed(path: String, code: Int32, bytes: Int)
    /// A file of storelens' own working copy the image's pages are read from could not be read:
    /// our own failure too, with the errno (never a finding about the evidence, which was hashed
    /// as it was copied).
    case sourceReadFailed(path: String, code: Int32)

    public var description: String {
        switch self {
        case .mainFile(let error):
            "The main database file is unreadable: \(error)"
        case .walRejected(let problem):
            "The WAL cannot be used: \(problem)"
        case .pageSizeMismatch(let main, let wal):
            "The WAL's page size (\(wal) bytes) differs from the main database file's (\(main) bytes), so the WAL does not belong to this database."
        case .walDataMissing:
            "A WAL with committed frames was given without its bytes, so its pages cannot be applied."
        case .walDataMismatch(let parsed, let given):
            "The WAL bytes given (\(given) bytes) are not the ones that were parsed (\(parsed) bytes)."
        case .commitOutOfRange(let requested, let available):
            "Commit \(requested) does not exist: the WAL has \(plural(available, "valid commit"))."
        case .imageTooLarge(let bytes, let limit):
            "The database image would be \(bytes) bytes, more than the limit of \(limit) bytes."
        case .imageHeaderInvalid(let error):
            "The database image built from the main file and WAL has no valid header: \(error)"
        case .writeFailed(let path, let code, let bytes):
            "The database image (\(bytes) bytes) could not be written to \(path) (\(String(cString: strerror(code)))); check free space in TMPDIR."
        case .sourceReadFailed(let path, let code):
            "The working copy \(path) could not be read to build a database image (\(String(cString: strerror(code)))); check TMPDIR and run the command again."
        }
    }
}
