import CArchive
import Foundation
import StoreFormats

/// Bounds on what reading one archive may cost. Archives come from outside; a decompression
/// bomb must stop with an error naming the entry, not fill the disk.
public struct ArchiveLimits: Sendable {
    /// Bytes written into the scratch folder, over all entries.
    public var maxExtractedBytes: Int64 = 16 << 30
    /// Size of any one entry (declared or actual).
    public var maxEntryBytes: Int64 = 8 << 30
    /// Decompressed ÷ compressed, checked once an entry or the stream passes 64 MiB.
    public var maxCompressionRatio: Double = 1000
    /// Entries read before giving up.
    public var maxEntries = 2_000_000
    /// Read what a damaged archive still holds (`--read-damaged`) instead of refusing it: the
    /// damage is then kept in `EvidenceSession.damagedInputs` for the caller to state.
    public var readDamaged = false

    public init() {}
}

/// Why an archive could not be read at all.
public enum ArchiveError: Error, Equatable, CustomStringConvertible, Sendable {
    case unsupported(path: String, detail: String)
    case empty(path: String)
    case bomb(path: String, entry: String, detail: String)
    case tooManyEntries(path: String, limit: Int)

    public var description: String {
        switch self {
        case .unsupported(let path, let detail):
            return "\(path) is not an archive storelens can read (\(detail)); give a store file, a folder, or a tar/zip archive of an app container."
        case .empty(let path):
            return "\(path) is an empty archive: it holds no files."
        case .bomb(let path, let entry, let detail):
            return "\(path): stopped at entry \(entry): \(detail); if the archive is genuine, raise the limit with the flag named above."
        case .tooManyEntries(let path, let limit):
            return "\(path) has more than \(limit) entries; raise the limit with --max-entries if the archive is genuine."
        }
    }
}

/// Reads an archive through libarchive in one streaming pass and extracts only store families
/// (SQLite files found by their first bytes, sidecars, external-data folders and container
/// identity plists) into a fresh folder in the scratch space.
final class ArchiveInventory {
    let url: URL
    let displayName: String
    let output: URL
    let limits: ArchiveLimits
    let wanted: [PathPattern]
    let gzipDecoder: GzipDecoder

    struct Result {
        var files: [SeenFile] = []
        var containers: [ContainerIdentity] = []
        var skipped: [SkippedEntry] = []
        var warnings: [String] = []
        var extracted: [(path: String, sha256: String)] = []
        /// Set when the archive is damaged part-way: what was found before stays valid.
        var damage: String?
        var entries = 0
    }

    let zipReader: ZipReader

    init(url: URL, displayName: String, output: URL, limits: ArchiveLimits, wanted: [PathPattern] = [],
         gzipDecoder: GzipDecoder = .preferred, zipReader: ZipReader = .preferred) {
        self.gzipDecoder = gzipDecoder
        self.zipReader = zipReader
        self.url = url
        self.displayName = displayName
        self.output = output
        self.limits = limits
        self.wanted = wanted
    }

    func read() throws -> Result {
        // A zip is read through its central directory: only the first bytes of each entry and the
        // whole of the entries worth extracting, not every entry's data. When the directory cannot
        // be trusted the zip is read entry by entry like any other archive, with a note saying why.
        var note: String?
        var localHeadersOnly = false
        if zipReader == .centralDirectory, Self.looksLikeZip(url) {
            switch try readThroughCentralDirectory() {
            case .read(let result): return result
            case .fallback(let reason, let damaged):
                // A damaged directory misleads libarchive's seeking reader as well: read the local
                // headers one after another from the start, as a zip streamed from a pipe is read.
                localHeadersOnly = damaged
                note = damaged
                    ? "the zip's central directory is damaged (\(reason)); its entries were read one after another from the start of the file instead"
                    : "the zip was read entry by entry, not through its central directory (\(reason))"
            }
        }
        var result = try readStreaming(localHeadersOnly: localHeadersOnly)
        if let note { result.warnings.insert(note, at: 0) }
        return result
    }

    /// Reads the archive in one streaming pass through libarchive; `localHeadersOnly` reads a zip
    /// by its local headers alone, never looking at its central directory.
    func readStreaming(localHeadersOnly: Bool = false) throws -> Result {
        // A .tar.gz's gzip layer is decoded by ISA-L where it is built in (see GzipSource); it
        // must outlive the archive handle, which holds a pointer to it.
        let gzip = gzipDecoder == .isal && GzipSource.looksLikeGzip(url) ? GzipSource(url: url) : nil
        defer { withExtendedLifetime(gzip) {} }
        guard let a = archive_read_new() else { throw ArchiveError.unsupported(path: displayName, detail: "libarchive could not start") }
        defer { archive_read_free(a) }
        archive_read_support_filter_all(a)
        if localHeadersOnly { archive_read_support_format_zip_streamable(a) } else { archive_read_support_format_all(a) }
        let opened = gzip.map { $0.attach(to: a) } ?? archive_read_open_filename(a, url.path, 1 << 16)
        EvidenceReads.pass(url.path)
        let compressedBytes = { gzip?.compressedBytes ?? archive_filter_bytes(a, -1) }
        guard opened == ARCHIVE_OK else {
            throw ArchiveError.unsupported(path: displayName, detail: Self.message(a))
        }
        var result = Result()
        var extractedBytes: Int64 = 0
        var usedNames = Set<String>()
        var entry: OpaquePointer?

        // Hashing and writing run on a second thread; results are collected once the stream ends.
        let writer = ExtractionWriter()
        defer { writer.close() }
        var pending: [(slot: Int, file: SeenFile)] = []
        var identities: [(root: String, fileName: String, url: URL)] = []

        var lastName = ""
        let progress = ProgressReporter.current
        let archiveFileBytes = FileWork.size(url)
        let archiveBytes = progress.isSilent ? nil : archiveFileBytes
        while true {
            let status = archive_read_next_header(a, &entry)
            progress.report("reading \(displayName)", done: compressedBytes(), total: archiveBytes, unit: .bytes)
            // Skipping an entry's data decompresses it: check the stream after every skip.
            if !lastName.isEmpty { try checkStreamRatio(a, compressed: compressedBytes(), entry: lastName) }
            if status == ARCHIVE_EOF { break }
            if status == ARCHIVE_FATAL {
                if result.entries == 0 {
                    throw ArchiveError.unsupported(path: displayName, detail: Self.message(a))
                }
                result.damage = "the archive is damaged after \(result.entries) entries, the last \(lastName.isEmpty ? "none" : lastName) (\(Self.message(a)))"
                break
            }
            guard let entry else { break }
            result.entries += 1
            if result.entries > limits.maxEntries { throw ArchiveError.tooManyEntries(path: displayName, limit: limits.maxEntries) }
            let name = Self.name(of: entry)
            lastName = name
            if status == ARCHIVE_FAILED {
                result.warnings.append("\(name): \(Self.message(a)); skipped")
                result.skipped.append(SkippedEntry(path: name, reason: Self.message(a)))
                continue
            }
            guard Self.isRegularFile(entry, name: name, result: &result) else { continue }
            let declaredSize = archive_entry_size_is_set(entry) != 0 ? archive_entry_size(entry) : nil
            guard let admitted = try admit(name: name, declaredSize: declaredSize, result: &result) else { continue }
            let path = admitted.path
            if archive_entry_is_encrypted(entry) != 0 {
                result.warnings.append("\(path): encrypted entry; skipped (storelens does not take passphrases)")
                result.skipped.append(SkippedEntry(path: path, reason: "encrypted"))
                continue
            }
            // Read the first block to sniff; keep reading only when the entry is worth extracting.
            var block: UnsafeRawPointer?
            var blockSize = 0
            var offset: Int64 = 0
            let first = archive_read_data_block(a, &block, &blockSize, &offset)
            if first == ARCHIVE_FATAL {
                result.damage = "the archive is damaged inside \(path) (\(Self.message(a)))"
                break
            }
            if first == ARCHIVE_FAILED || first == ARCHIVE_WARN && block == nil {
                result.warnings.append("\(path): \(Self.message(a)); skipped")
                result.skipped.append(SkippedEntry(path: path, reason: Self.message(a)))
                continue
            }
            let head = first == ARCHIVE_EOF || block == nil ? Data() : Data(bytes: block!, count: min(blockSize, 100))
            guard let sniffed = sniff(head, atStart: offset == 0, entry: admitted, result: &result),
                  let (fd, destination, target) = try createExtraction(for: admitted, declaredSize: declaredSize, archiveBytes: archiveFileBytes,
                                                                       usedNames: &usedNames, writer: writer, result: &result) else { continue }
            let slot = writer.begin(fd: fd)
            let data = try extractData(a, entry: entry, first: first, block: block, blockSize: blockSize, offset: offset, path: path,
                                       writer: writer, slot: slot, extractedBytes: &extractedBytes, compressedBytes: compressedBytes)
            if let warning = data.warning, data.damaged == nil {
                result.warnings.append(Self.dataWarning(path: path, warning))
                result.damage = result.damage ?? Self.dataWarning(path: path, warning)
            }
            pending.append((slot: slot, file: SeenFile(path: target, url: destination, size: Int(data.size), isSQLite: sniffed.isSQLite, atomic: sniffed.atomic)))
            if admitted.isIdentity { identities.append((root: admitted.root, fileName: admitted.fileName, url: destination)) }
            if let damaged = data.damaged {
                result.damage = "the archive is damaged inside \(path) (\(damaged))"
                break
            }
        }
        if result.entries == 0 && result.damage == nil { throw ArchiveError.empty(path: displayName) }
        if let gzip, result.damage == nil { Self.verifyGzip(gzip, lastEntry: lastName, result: &result) }
        try finish(&result, writer: writer, pending: pending, identities: identities)
        return result
    }

    /// A .tar.gz's gzip layer, once every entry is read: its checksum, and bytes after its end.
    private static func verifyGzip(_ gzip: GzipSource, lastEntry: String, result: inout Result) {
        switch gzip.finish() {
        case .verified:
            if gzip.trailingBytes > 0 {
                // Not gzip, not part of any entry: the file was altered or appended to after it was made.
                result.damage = "\(gzip.trailingBytes) bytes after the end of the gzip stream (after the last entry, \(lastEntry)) are not gzip data: the archive was altered or appended to after it was made"
            }
        case .damaged(let problem):
            result.damage = "the archive's gzip stream fails its check after the last entry, \(lastEntry) (\(problem)): any entry may hold corrupt bytes"
        case .unverified(let decoded):
            result.warnings.append("the gzip stream goes on for more than \(decoded) bytes after the archive's end; that part was not read, so its checksum was not verified")
        }
    }

    /// Only regular files are extracted: a folder is passed over, a link (hard or symbolic) or
    /// anything else is skipped and said, never followed or created.
    private static func isRegularFile(_ entry: OpaquePointer, name: String, result: inout Result) -> Bool {
        let type = archive_entry_filetype(entry)
        if type == mode_t(storelens_AE_IFDIR) { return false }
        if archive_entry_hardlink(entry) != nil {
            result.skipped.append(SkippedEntry(path: name, reason: "hard link (not followed or created)"))
            return false
        }
        if type == mode_t(storelens_AE_IFLNK) {
            result.skipped.append(SkippedEntry(path: name, reason: "symbolic link (not followed or created)"))
            return false
        }
        guard type == mode_t(storelens_AE_IFREG) else {
            result.skipped.append(SkippedEntry(path: name, reason: "not a regular file"))
            return false
        }
        return true
    }

    /// What reading one entry's data gave: its size (a declared size past the data included),
    /// libarchive's error when the data stopped short, its warning when the data did not match
    /// the entry's headers.
    struct EntryData {
        var size: Int64
        var damaged: String?
        var warning: String?
    }

    /// Writes one entry's data through `writer` into `slot`, from the block already read (`first`)
    /// to the end, checking every limit as it goes; a declared size past the data (a trailing
    /// hole, hashed as zeros) counts like data. Sparse entries: each block goes at its offset.
    private func extractData(_ a: OpaquePointer, entry: OpaquePointer, first: Int32, block: UnsafeRawPointer?, blockSize: Int,
                             offset: Int64, path: String, writer: ExtractionWriter, slot: Int, extractedBytes: inout Int64,
                             compressedBytes: () -> Int64) throws -> EntryData {
        var (block, blockSize, offset) = (block, blockSize, offset)
        var data = EntryData(size: 0)
        let startCompressed = compressedBytes()
        var status = first
        while status == ARCHIVE_OK || status == ARCHIVE_WARN {
            // libarchive warns at the end of a zip entry whose CRC-32 or size does not match its headers.
            if status == ARCHIVE_WARN { data.warning = Self.message(a) }
            if let block, blockSize > 0 {
                writer.write(block, count: blockSize, at: offset)
                data.size = max(data.size, offset + Int64(blockSize))
                extractedBytes += Int64(blockSize)
                try checkExtracted(size: data.size, compressed: compressedBytes() - startCompressed, extractedBytes: extractedBytes, path: path)
            }
            status = archive_read_data_block(a, &block, &blockSize, &offset)
        }
        if status == ARCHIVE_FATAL || status == ARCHIVE_FAILED {
            data.damaged = Self.message(a)
        }
        var declared: Int64?
        if archive_entry_size_is_set(entry) != 0, archive_entry_size(entry) > data.size {
            declared = archive_entry_size(entry)
            data.size = archive_entry_size(entry)
            try checkExtracted(size: data.size, compressed: compressedBytes() - startCompressed, extractedBytes: nil, path: path)
        }
        writer.end(slot: slot, extendingTo: declared)
        return data
    }

    /// A warning for an extracted entry whose bytes do not match what its headers say.
    static func dataWarning(path: String, _ problem: String) -> String {
        "\(path): \(problem); the extracted copy differs from what the archive says it holds (the entry is damaged)"
    }

    /// Once every entry is read: collects the hashes, reads the container identities, and removes
    /// the provisional sidecars and plists whose store never came.
    func finish(_ result: inout Result, writer: ExtractionWriter, pending: [(slot: Int, file: SeenFile)],
                identities: [(root: String, fileName: String, url: URL)]) throws {
        let written = writer.drain()
        for (slot, file) in pending {
            if let failure = written[slot].failure {
                throw WorkingFolderFailure(code: failure)
            }
            result.extracted.append((path: file.path, sha256: written[slot].sha256))
            result.files.append(file)
        }
        for identity in identities {
            if identity.fileName == "AppDataInfo.plist" {
                result.containers.append(ContainerIdentity.fromAppDataInfo(identity.url, root: identity.root.isEmpty ? "AppData" : identity.root + "/AppData"))
            } else if let container = ContainerIdentity.fromMetadataPlist(identity.url, root: identity.root) {
                result.containers.append(container)
            }
        }
        // Provisional sidecars and plists whose store never came are removed from disk; the
        // sidecars are still reported as orphans by the grouping.
        let mains = Set(result.files.filter(\.isSQLite).map(\.path))
        for file in result.files where !file.isStore {
            let belongs = FamilyGrouping.sidecarSuffixes.keys.contains { file.path.hasSuffix($0) && mains.contains(String(file.path.dropLast($0.count))) }
            let isWanted = wanted.contains { $0.matches(file.path, ignoringCase: true) }
            if !belongs && !isWanted && !file.path.contains("_SUPPORT/") { unlink(file.url.path) }
        }
    }

    /// The stream as a whole (a .tar.gz of zeros is a bomb even when no entry is extracted).
    private func checkStreamRatio(_ a: OpaquePointer, compressed: Int64, entry: String) throws {
        let uncompressed = archive_filter_bytes(a, 0)
        let compressed = max(1, compressed)
        if uncompressed > 256 << 20, Double(uncompressed) / Double(compressed) > limits.maxCompressionRatio {
            throw ArchiveError.bomb(path: displayName, entry: entry,
                                    detail: "the archive expands more than \(Int(limits.maxCompressionRatio)) times (a decompression bomb; --max-ratio)")
        }
    }

    /// Creates an extracted entry's file beneath the output folder (`PrivateTree`); the `n`th copy
    /// of a name gets `~n`. Nil, with the entry skipped and why, when the file system refuses the
    /// name; a full or unwritable working folder is ours and throws.
    func createEntryFile(_ components: [String], copy n: Int, path: String, result: inout Result) throws -> (fd: Int32, url: URL)? {
        do throws(PrivateTree.Failure) {
            return try PrivateTree(root: output).createFile(components.dropLast() + [(components.last ?? "entry") + (n > 0 ? "~\(n)" : "")])
        } catch .ours(let code) {
            throw WorkingFolderFailure(code: code)
        } catch .name(let reason) {
            result.skipped.append(SkippedEntry(path: path, reason: "cannot be extracted: \(reason)"))
            return nil
        }
    }

    /// The entry's name: UTF-8 when libarchive can give it, else the raw bytes kept distinguishable.
    static func name(of entry: OpaquePointer) -> String {
        if let utf8 = archive_entry_pathname_utf8(entry) { return String(cString: utf8) }
        guard let raw = archive_entry_pathname(entry) else { return "(unnamed entry)" }
        let bytes = UnsafeBufferPointer(start: UnsafeRawPointer(raw).assumingMemoryBound(to: UInt8.self), count: strlen(raw))
        return ArchivePath.decode(rawBytes: Array(bytes))
    }

    static func message(_ a: OpaquePointer) -> String {
        archive_error_string(a).map { String(cString: $0) } ?? "unknown libarchive error"
    }
}

extension ArchiveError: DescribedError {
    public var errorClass: ErrorClass { .input }
}
