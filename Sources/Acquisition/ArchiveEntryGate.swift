import Foundation
import StoreFormats

/// The rules every archive entry passes, whichever reader found it (the libarchive stream or the
/// zip central directory): one place for what is skipped and why, what is extracted, how its file
/// is created, and when an entry is a decompression bomb. Both readers call these in the same
/// order; only how they get an entry's name, size and bytes differs.
extension ArchiveInventory {
    /// An entry whose name passed `ArchivePath`'s rules, and what its name says it may be.
    struct AdmittedEntry {
        let components: [String]
        /// The sanitised path, components joined by "/".
        let path: String
        var fileName: String { components.last ?? path }
        var isSidecar: Bool { FamilyGrouping.sidecarSuffixes.keys.contains { fileName.hasSuffix($0) } }
        var isSupport: Bool { components.contains { $0.hasPrefix(".") && $0.hasSuffix("_SUPPORT") } }
        var isIdentity: Bool { fileName == ContainerIdentity.metadataPlistName || fileName == "AppDataInfo.plist" }
        /// The folder of a container identity plist, for `ContainerIdentity`.
        var root: String { components.dropLast().joined(separator: "/") }
    }

    /// The entry's name through `ArchivePath.sanitize`: nil, with the entry skipped and why, when
    /// it is unsafe; a leading "/" is dropped with a warning. A declared size (when the format
    /// gives one) above --max-entry-bytes stops the read.
    func admit(name: String, declaredSize: Int64?, result: inout Result) throws -> AdmittedEntry? {
        let components: [String]
        switch ArchivePath.sanitize(name) {
        case .rejected(let reason):
            result.skipped.append(SkippedEntry(path: name, reason: "unsafe path: \(reason)"))
            return nil
        case .safe(let parts, let wasAbsolute):
            components = parts
            if wasAbsolute { result.warnings.append("\(name): leading / removed") }
        }
        let path = components.joined(separator: "/")
        if let declaredSize, declaredSize > limits.maxEntryBytes {
            throw ArchiveError.bomb(path: displayName, entry: path,
                                    detail: "it declares \(declaredSize) bytes, above the per-entry limit of \(limits.maxEntryBytes) (--max-entry-bytes)")
        }
        return AdmittedEntry(components: components, path: path)
    }

    /// What the entry's first bytes make of it.
    struct Sniffed {
        let isSQLite: Bool
        let atomic: StoreFileFormat?
    }

    /// Whether the entry is worth extracting, from its first bytes (`head`, read from its start
    /// when `atStart`): a SQLite file or an atomic Core Data store, a sidecar, an external-data
    /// file, a container identity, or a path the user asked for. An AppleDouble file is skipped
    /// and said; anything else is passed over silently. Nil: not extracted.
    func sniff(_ head: Data, atStart: Bool, entry: AdmittedEntry, result: inout Result) -> Sniffed? {
        if atStart, AppleDouble.matches(head) {
            result.skipped.append(SkippedEntry(path: entry.path, reason: AppleDouble.reason(for: entry.path)))
            return nil
        }
        let isSQLite = atStart && DatabaseHeader.isSQLite(head)
        let atomic = atStart && !isSQLite ? StoreFileFormat.atomic(head: head) : nil
        let isWanted = wanted.contains { $0.matches(entry.path, ignoringCase: true) }
        guard isSQLite || atomic != nil || entry.isSidecar || entry.isSupport || entry.isIdentity || isWanted else { return nil }
        return Sniffed(isSQLite: isSQLite, atomic: atomic)
    }

    /// The extracted file of an entry: O_CREAT|O_EXCL|O_NOFOLLOW under the private output folder
    /// (`createEntryFile`), the nth entry of one name as `name~n`. Nil, with the entry skipped,
    /// when the file system refuses the name. An entry that declares more bytes than the archive
    /// can expand to (sparse or not: its logical size costs hashing and reading) is a bomb before
    /// any work on it; a failed write of an earlier entry is our failure.
    func createExtraction(for entry: AdmittedEntry, declaredSize: Int64?, archiveBytes: Int64, usedNames: inout Set<String>,
                          writer: ExtractionWriter, result: inout Result) throws -> (fd: Int32, url: URL, target: String)? {
        var target = entry.path
        var n = 0
        while usedNames.contains(target) { n += 1; target = entry.path + "~\(n)" }
        usedNames.insert(target)
        if let failed = writer.firstFailure() {
            throw WorkingFolderFailure(code: failed.code)
        }
        guard let (fd, destination) = try createEntryFile(entry.components, copy: n, path: entry.path, result: &result) else { return nil }
        if let declaredSize, declaredSize > 64 << 20, Double(declaredSize) / Double(max(1, archiveBytes)) > limits.maxCompressionRatio {
            close(fd)
            unlink(destination.path)
            throw ArchiveError.bomb(path: displayName, entry: entry.path, detail: "it declares \(declaredSize) bytes (sparse or not) in an archive of \(archiveBytes) bytes: it expands more than \(Int(limits.maxCompressionRatio)) times (a decompression bomb; --max-ratio)")
        }
        return (fd, destination, target)
    }

    /// The limits on an entry's data as it is written: `size` bytes of this entry from `compressed`
    /// bytes of the archive, `extractedBytes` in all so far.
    /// `extractedBytes` nil: the total is not checked (a trailing hole, hashed but never written).
    func checkExtracted(size: Int64, compressed: Int64, extractedBytes: Int64?, path: String) throws {
        if size > limits.maxEntryBytes {
            throw ArchiveError.bomb(path: displayName, entry: path, detail: "it decompresses to more than the per-entry limit of \(limits.maxEntryBytes) bytes (--max-entry-bytes)")
        }
        if let extractedBytes, extractedBytes > limits.maxExtractedBytes {
            throw ArchiveError.bomb(path: displayName, entry: path, detail: "more than \(limits.maxExtractedBytes) bytes would be extracted in total (--max-extract-bytes)")
        }
        if size > 64 << 20, Double(size) / Double(max(1, compressed)) > limits.maxCompressionRatio {
            throw ArchiveError.bomb(path: displayName, entry: path, detail: "it expands more than \(Int(limits.maxCompressionRatio)) times (a decompression bomb; --max-ratio)")
        }
    }
}
