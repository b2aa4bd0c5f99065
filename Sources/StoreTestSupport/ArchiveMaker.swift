import CArchive
import Foundation

/// Writes archives with libarchive for tests: every format and filter storelens reads, and the
/// hostile entries (traversal names, links, raw non-UTF-8 names) that system tools refuse to make.
public final class ArchiveMaker {
    public enum Format: Sendable { case paxTar, gnuTar, zip, zip64, sevenZip }
    public enum Filter: Sendable { case none, gzip, bzip2, xz, zstd }

    public enum Entry {
        case file(String, Data)
        /// A name given as raw bytes (possibly not UTF-8).
        case rawNameFile([UInt8], Data)
        case directory(String)
        case symlink(String, target: String)
        case hardlink(String, target: String)
    }

    public struct MakerError: Error, CustomStringConvertible {
        public let description: String
    }

    /// Writes `entries` to `url`.
    public static func write(_ entries: [Entry], to url: URL, format: Format, filter: Filter = .none, zipStored: Bool = false,
                             passphrase: String? = nil) throws {
        guard let a = archive_write_new() else { throw MakerError(description: "archive_write_new failed") }
        defer { archive_write_free(a) }
        switch format {
        case .paxTar: archive_write_set_format_pax_restricted(a)
        case .gnuTar: archive_write_set_format_gnutar(a)
        case .zip, .zip64:
            archive_write_set_format_zip(a)
            if format == .zip64 { archive_write_set_format_option(a, "zip", "zip64", "1") }
            if zipStored { archive_write_set_format_option(a, "zip", "compression", "store") }
            if let passphrase {
                archive_write_set_format_option(a, "zip", "encryption", "zipcrypt")
                archive_write_set_passphrase(a, passphrase)
            }
        case .sevenZip: archive_write_set_format_7zip(a)
        }
        switch filter {
        case .none: break
        case .gzip: archive_write_add_filter_gzip(a)
        case .bzip2: archive_write_add_filter_bzip2(a)
        case .xz: archive_write_add_filter_xz(a)
        case .zstd: archive_write_add_filter_zstd(a)
        }
        guard archive_write_open_filename(a, url.path) == ARCHIVE_OK else {
            throw MakerError(description: (archive_error_string(a).map { String(cString: $0) } ?? "libarchive failed without a message"))
        }
        for item in entries {
            guard let e = archive_entry_new() else { continue }
            defer { archive_entry_free(e) }
            var data = Data()
            switch item {
            case .file(let name, let d):
                archive_entry_set_pathname_utf8(e, name)
                archive_entry_set_filetype(e, UInt32(storelens_AE_IFREG))
                archive_entry_set_perm(e, 0o644)
                archive_entry_set_size(e, Int64(d.count))
                data = d
            case .rawNameFile(let bytes, let d):
                var name = bytes.map { CChar(bitPattern: $0) }
                name.append(0)
                archive_entry_set_pathname(e, name)
                archive_entry_set_filetype(e, UInt32(storelens_AE_IFREG))
                archive_entry_set_perm(e, 0o644)
                archive_entry_set_size(e, Int64(d.count))
                data = d
            case .directory(let name):
                archive_entry_set_pathname_utf8(e, name)
                archive_entry_set_filetype(e, UInt32(storelens_AE_IFDIR))
                archive_entry_set_perm(e, 0o755)
            case .symlink(let name, let target):
                archive_entry_set_pathname_utf8(e, name)
                archive_entry_set_filetype(e, UInt32(storelens_AE_IFLNK))
                archive_entry_set_symlink_utf8(e, target)
                archive_entry_set_perm(e, 0o777)
            case .hardlink(let name, let target):
                archive_entry_set_pathname_utf8(e, name)
                archive_entry_set_hardlink_utf8(e, target)
                archive_entry_set_size(e, 0)
            }
            archive_entry_set_mtime(e, 1_700_000_000, 0)
            guard archive_write_header(a, e) >= ARCHIVE_WARN else {
                throw MakerError(description: (archive_error_string(a).map { String(cString: $0) } ?? "libarchive failed without a message"))
            }
            if !data.isEmpty {
                let written = data.withUnsafeBytes { archive_write_data(a, $0.baseAddress, $0.count) }
                guard written == data.count else { throw MakerError(description: "short write of \(data.count) bytes") }
            }
        }
        archive_write_close(a)
    }

    /// `data` as one gzip member (libarchive's raw format through its gzip filter), for tests that
    /// build multi-member streams or damage a member's trailer.
    public static func gzip(_ data: Data) throws -> Data {
        guard let a = archive_write_new() else { throw MakerError(description: "archive_write_new failed") }
        defer { archive_write_free(a) }
        archive_write_set_format_raw(a)
        archive_write_add_filter_gzip(a)
        archive_write_set_bytes_in_last_block(a, 1)
        // libarchive keeps the buffer's address across calls: it must not be a Swift array.
        let capacity = data.count + data.count / 10 + 4096
        let output = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        defer { output.deallocate() }
        let used = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        defer { used.deallocate() }
        used.pointee = 0
        guard archive_write_open_memory(a, output, capacity, used) == ARCHIVE_OK,
              let e = archive_entry_new() else {
            throw MakerError(description: archive_error_string(a).map { String(cString: $0) } ?? "libarchive failed without a message")
        }
        defer { archive_entry_free(e) }
        archive_entry_set_pathname_utf8(e, "data")
        archive_entry_set_filetype(e, UInt32(storelens_AE_IFREG))
        archive_entry_set_size(e, Int64(data.count))
        guard archive_write_header(a, e) == ARCHIVE_OK,
              data.withUnsafeBytes({ archive_write_data(a, $0.baseAddress, $0.count) }) == data.count,
              archive_write_close(a) == ARCHIVE_OK else {
            throw MakerError(description: archive_error_string(a).map { String(cString: $0) } ?? "libarchive failed without a message")
        }
        return Data(bytes: output, count: used.pointee)
    }

    /// Every regular file under `folder`, as entries named relative to `prefix`.
    public static func entries(of folder: URL, prefix: String = "") throws -> [Entry] {
        var result: [Entry] = []
        let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey, .isDirectoryKey])
        let base = folder.standardizedFileURL.path
        while let url = walker?.nextObject() as? URL {
            let relative = String(url.standardizedFileURL.path.dropFirst(base.count + 1))
            let name = prefix.isEmpty ? relative : prefix + "/" + relative
            let values = try url.resourceValues(forKeys: [.isRegularFileKey, .isDirectoryKey])
            if values.isDirectory == true { result.append(.directory(name)) }
            else if values.isRegularFile == true { result.append(.file(name, try Data(contentsOf: url))) }
        }
        return result
    }
}
