import CZlib
import Foundation
import StoreFormats
#if canImport(CISAL)
import CISAL
#endif

/// How a zip is read.
public enum ZipReader: String, Sendable, CaseIterable {
    /// Through the central directory: every entry found there, only the first bytes of each read
    /// to sniff it, and only the entries worth extracting read whole (the default).
    case centralDirectory
    /// Entry by entry through libarchive, as every other archive (`STORELENS_ZIP=stream`; also
    /// what a zip falls back to when its central directory cannot be trusted).
    case streaming

    public static var preferred: ZipReader {
        ProcessInfo.processInfo.environment["STORELENS_ZIP"] == "stream" ? .streaming : .centralDirectory
    }
}

/// A zip read through its central directory (`ZipDirectory` parses the records; this reads the
/// file). The outcome must be what the streaming read gives on the same zip — the same entries in
/// the same order (libarchive's seeking zip reader also goes by local header offset), the same
/// names, skips, warnings, extracted files and hashes — so anything this reader does not handle
/// exactly as libarchive does is a fallback, decided before any work where it can be: an
/// encrypted entry, a method other than stored or deflate, names that are not plain or flagged
/// UTF-8, a local header that contradicts the directory, entries that overlap.
extension ArchiveInventory {
    enum ZipOutcome {
        case read(Result)
        /// The zip is to be streamed, for this reason; `damaged` when the central directory or
        /// the local headers are (the stream must then not rely on the directory either).
        case fallback(String, damaged: Bool)
    }

    /// A zip's first local header signature (an empty zip, which holds only its end record, is
    /// streamed: there is nothing to gain).
    static func looksLikeZip(_ url: URL) -> Bool {
        let fd = open(url.path, O_RDONLY | O_NOFOLLOW)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 4)
        return Foundation.read(fd, &head, 4) == 4 && head == [0x50, 0x4B, 0x03, 0x04]
    }

    /// Why the directory path stops; caught once, the zip is then streamed.
    private struct Fallback: Error {
        let reason: String
        var damaged = true
    }

    /// The central directory is read into memory whole; a larger one is streamed.
    static let maxCentralDirectoryBytes: Int64 = 1 << 30
    /// Compressed bytes inflated at most to sniff an entry's first bytes.
    static let maxSniffInput = 1 << 20

    func readThroughCentralDirectory() throws -> ZipOutcome {
        let fd = open(url.path, O_RDONLY | O_NOFOLLOW)
        // The directory, each entry's first bytes and the stores: at most one pass.
        EvidenceReads.pass(url.path)
        guard fd >= 0 else { return .fallback("the zip cannot be opened: \(String(cString: strerror(errno)))", damaged: false) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { return .fallback("the zip cannot be read: \(String(cString: strerror(errno)))", damaged: false) }
        let fileSize = Int64(st.st_size)

        let entries: [ZipDirectory.Entry]
        let end: ZipDirectory.End
        do {
            (end, entries) = try directory(fd: fd, fileSize: fileSize)
        } catch let fallback as Fallback {
            return .fallback(fallback.reason, damaged: fallback.damaged)
        }
        if entries.isEmpty {
            // An empty directory at the very start of the file is an empty zip; one after data is not to be believed.
            if end.directoryOffset == 0 { throw ArchiveError.empty(path: displayName) }
            return .fallback("the central directory lists no entries, but the file holds data before it", damaged: true)
        }
        if entries.count > limits.maxEntries { throw ArchiveError.tooManyEntries(path: displayName, limit: limits.maxEntries) }
        // In the order of their data, as libarchive reads a seekable zip.
        let order = entries.indices.sorted { (entries[$0].localHeaderOffset, $0) < (entries[$1].localHeaderOffset, $1) }
        for (i, index) in order.enumerated() {
            if let problem = Self.unsupported(entries[index]) { return .fallback(problem, damaged: false) }
            if i > 0, entries[order[i - 1]].localHeaderOffset == entries[index].localHeaderOffset {
                return .fallback("two central directory entries point at the same local header (overlapping entries)", damaged: true)
            }
        }

        let writer = ExtractionWriter()
        defer { writer.close() }
        var result = Result()
        var pending: [(slot: Int, file: SeenFile)] = []
        var identities: [(root: String, fileName: String, url: URL)] = []
        do {
            try readEntries(fd: fd, entries: entries, order: order, end: end, fileSize: fileSize, writer: writer,
                            result: &result, pending: &pending, identities: &identities)
        } catch let fallback as Fallback {
            // Nothing found so far counts: the streaming read starts over in an empty folder.
            _ = writer.drain()
            try emptyOutput()
            return .fallback(fallback.reason, damaged: fallback.damaged)
        }
        try finish(&result, writer: writer, pending: pending, identities: identities)
        return .read(result)
    }

    /// Reads and parses the end records and the central directory.
    private func directory(fd: Int32, fileSize: Int64) throws -> (ZipDirectory.End, [ZipDirectory.Entry]) {
        let tailLength = Int(min(fileSize, Int64(ZipDirectory.maxTailLength)))
        guard let tail = Self.pread(fd, at: fileSize - Int64(tailLength), count: tailLength) else {
            throw Fallback(reason: "its end could not be read")
        }
        do {
            let classic = try ZipDirectory.classicEnd(tail: tail, fileSize: fileSize)
            var end = classic.end
            if let at = classic.zip64RecordOffset {
                guard let record = Self.pread(fd, at: at, count: ZipDirectory.zip64RecordLength) else {
                    throw Fallback(reason: "the ZIP64 end of central directory record could not be read")
                }
                end = try ZipDirectory.zip64End(record, at: at, classic: end)
            }
            guard end.directorySize <= Self.maxCentralDirectoryBytes else {
                throw Fallback(reason: "the central directory is larger than \(Self.maxCentralDirectoryBytes >> 20) MiB", damaged: false)
            }
            guard let bytes = Self.pread(fd, at: end.directoryOffset, count: Int(end.directorySize)) else {
                throw Fallback(reason: "the central directory could not be read")
            }
            return (end, try ZipDirectory.entries(bytes, end: end, fileSize: fileSize))
        } catch let problem as ZipDirectory.Problem {
            throw Fallback(reason: problem.reason)
        }
    }

    /// What makes an entry one to leave to libarchive: its reading there has rules of its own.
    static func unsupported(_ entry: ZipDirectory.Entry) -> String? {
        let shown = ArchivePath.decode(rawBytes: entry.nameBytes)
        if entry.isEncrypted { return "\(shown) is encrypted" }
        if entry.method != 0 && entry.method != 8 { return "\(shown) uses compression method \(entry.method)" }
        if entry.method == 0 && entry.compressedSize != entry.uncompressedSize {
            return "\(shown) is stored with a compressed size unlike its size"
        }
        if entry.hasUnicodePathField { return "\(shown) carries a second, Unicode name" }
        if entry.nameBytes.isEmpty || entry.nameBytes.contains(0) || entry.nameBytes.contains(UInt8(ascii: "\\")) {
            return "\(shown) has an empty name, a NUL byte or a backslash in its name"
        }
        if entry.nameBytes.contains(where: { $0 >= 0x80 }) {
            guard entry.namesAreUTF8, String(validating: entry.nameBytes, as: UTF8.self) != nil else {
                return "\(shown) has a name that is not flagged UTF-8 (its character set is the reader's guess)"
            }
        }
        switch entry.host {
        case 0: break
        case 3:
            let type = (entry.externalAttributes >> 16) & UInt32(S_IFMT)
            if type != 0 && type != UInt32(S_IFREG) && type != UInt32(S_IFDIR) && type != UInt32(S_IFLNK) {
                return "\(shown) is a special file"
            }
        default: return "\(shown) was made on a system (\(entry.host)) whose file attributes are not read here"
        }
        return nil
    }

    private enum Kind { case regular, directory, symlink }

    /// As libarchive decides: a name ending in "/" is a folder; else the Unix mode, or the MS-DOS
    /// folder attribute.
    private static func kind(of entry: ZipDirectory.Entry) -> Kind {
        if entry.nameBytes.last == UInt8(ascii: "/") { return .directory }
        if entry.host == 3 {
            switch (entry.externalAttributes >> 16) & UInt32(S_IFMT) {
            case UInt32(S_IFDIR): return .directory
            case UInt32(S_IFLNK): return .symlink
            default: return .regular
            }
        }
        return entry.externalAttributes & 0x10 != 0 ? .directory : .regular
    }

    private func readEntries(fd: Int32, entries: [ZipDirectory.Entry], order: [Int], end: ZipDirectory.End, fileSize: Int64,
                             writer: ExtractionWriter, result: inout Result, pending: inout [(slot: Int, file: SeenFile)],
                             identities: inout [(root: String, fileName: String, url: URL)]) throws {
        var extractedBytes: Int64 = 0
        var usedNames = Set<String>()
        let progress = ProgressReporter.current
        let archiveBytes = progress.isSilent ? nil : fileSize
        for (i, index) in order.enumerated() {
            let entry = entries[index]
            // Where the next entry's local header starts (the central directory after the last).
            let boundary = i + 1 < order.count ? entries[order[i + 1]].localHeaderOffset : end.directoryOffset
            progress.report("reading \(displayName)", done: entry.localHeaderOffset, total: archiveBytes, unit: .bytes)
            result.entries += 1
            let name = String(decoding: entry.nameBytes, as: UTF8.self)

            // The local header must agree with the directory, and the data fit before the next entry.
            let headLength = Int(min(boundary - entry.localHeaderOffset, 1 << 16))
            guard headLength >= ZipDirectory.localHeaderFixedLength,
                  var head = Self.pread(fd, at: entry.localHeaderOffset, count: headLength) else {
                throw Fallback(reason: "\(name): no room for its local header before the next entry (overlapping entries)")
            }
            if let needed = ZipDirectory.localHeaderLength(head), needed > head.count {
                guard Int64(needed) <= boundary - entry.localHeaderOffset, let longer = Self.pread(fd, at: entry.localHeaderOffset, count: needed) else {
                    throw Fallback(reason: "\(name): its local header runs into the next entry (overlapping entries)")
                }
                head = longer
            }
            let local: ZipDirectory.LocalHeader
            do { local = try ZipDirectory.localHeader(head) } catch { throw Fallback(reason: "\(name): \(error.reason)") }
            try Self.check(local, against: entry, name: name)
            let dataStart = entry.localHeaderOffset + Int64(local.headerLength)
            guard dataStart <= boundary, entry.compressedSize <= boundary - dataStart else {
                throw Fallback(reason: "\(name): its data runs into the next entry or the central directory (overlapping entries)")
            }

            switch Self.kind(of: entry) {
            case .directory: continue
            case .symlink:
                result.skipped.append(SkippedEntry(path: name, reason: "symbolic link (not followed or created)"))
                continue
            case .regular: break
            }
            let declaredSize = entry.uncompressedSize
            guard let admitted = try admit(name: name, declaredSize: declaredSize, result: &result) else { continue }
            let path = admitted.path

            // The first bytes, to sniff.
            let sniffLength = Int(min(declaredSize, 100))
            let sniffed: [UInt8]
            if entry.method == 0 {
                let inHead = Int(min(Int64(head.count) - Int64(local.headerLength), Int64(sniffLength)))
                if inHead >= sniffLength {
                    sniffed = Array(head[local.headerLength..<(local.headerLength + sniffLength)])
                } else if let read = Self.pread(fd, at: dataStart, count: sniffLength) {
                    sniffed = read
                } else {
                    throw Fallback(reason: "\(name): its first bytes could not be read", damaged: false)
                }
            } else {
                sniffed = try sniffDeflated(fd: fd, at: dataStart, compressedSize: entry.compressedSize, wanted: sniffLength, name: name)
            }
            guard let kind = sniff(Data(sniffed), atStart: true, entry: admitted, result: &result),
                  let (out, destination, target) = try createExtraction(for: admitted, declaredSize: declaredSize, archiveBytes: fileSize,
                                                                        usedNames: &usedNames, writer: writer, result: &result) else { continue }
            let slot = writer.begin(fd: out)
            let crc: UInt32
            do {
                crc = try copyEntry(fd: fd, entry: entry, dataStart: dataStart, path: path, name: name, writer: writer,
                                    extractedBytes: &extractedBytes)
            } catch {
                // The slot is closed either way, so a fallback can drain the writer.
                writer.end(slot: slot, extendingTo: nil)
                throw error
            }
            writer.end(slot: slot, extendingTo: nil)
            if crc != entry.crc32 {
                let warning = Self.dataWarning(path: path, "ZIP bad CRC: 0x\(String(crc, radix: 16)) should be 0x\(String(entry.crc32, radix: 16))")
                result.warnings.append(warning)
                result.damage = result.damage ?? warning
            }
            pending.append((slot: slot, file: SeenFile(path: target, url: destination, size: Int(declaredSize), isSQLite: kind.isSQLite, atomic: kind.atomic)))
            if admitted.isIdentity { identities.append((root: admitted.root, fileName: admitted.fileName, url: destination)) }
        }
    }

    /// The local header must name the same entry, method and encryption as the directory, and
    /// any CRC-32 or size it gives must be the directory's.
    private static func check(_ local: ZipDirectory.LocalHeader, against entry: ZipDirectory.Entry, name: String) throws {
        guard local.nameBytes == entry.nameBytes else {
            throw Fallback(reason: "\(name): its local header names \(ArchivePath.decode(rawBytes: local.nameBytes)) (the central directory and the entries disagree)")
        }
        let mask: UInt16 = 0x0001 | 0x0040 | 0x0800 | 0x2000
        guard local.method == entry.method, local.flags & mask == entry.flags & mask, !local.hasUnicodePathField else {
            throw Fallback(reason: "\(name): its local header gives another method or flags than the central directory")
        }
        if local.flags & 0x0008 == 0 {
            func agrees(_ written: UInt32, _ size: Int64) -> Bool {
                written == 0 || written == 0xFFFF_FFFF || Int64(written) == size
            }
            let sizesAgree = agrees(local.compressedSize32, entry.compressedSize) && agrees(local.uncompressedSize32, entry.uncompressedSize)
            guard local.crc32 == 0 || local.crc32 == entry.crc32, sizesAgree else {
                throw Fallback(reason: "\(name): its local header gives another CRC-32 or size than the central directory")
            }
        }
    }

    /// The first `wanted` bytes of a deflated entry, inflating only as much as they need.
    private func sniffDeflated(fd: Int32, at start: Int64, compressedSize: Int64, wanted: Int, name: String) throws -> [UInt8] {
        if wanted == 0 { return [] }
        let inflater = try Inflater(name: name)
        var output = [UInt8](repeating: 0, count: wanted)
        var produced = 0
        var offset: Int64 = 0
        var chunk = 4096
        while produced < wanted {
            let take = Int(min(Int64(chunk), compressedSize - offset))
            guard take > 0, offset < Int64(Self.maxSniffInput), let input = Self.pread(fd, at: start + offset, count: take) else {
                throw Fallback(reason: "\(name): its first bytes could not be inflated from its data", damaged: false)
            }
            chunk = min(chunk * 4, 1 << 18)
            let step = input.withUnsafeBytes { inBuffer in
                output.withUnsafeMutableBytes { outBuffer in
                    inflater.run(input: inBuffer, output: outBuffer.baseAddress! + produced, capacity: wanted - produced)
                }
            }
            produced += step.produced
            offset += Int64(step.consumed)
            if case .failed(let message) = step.state { throw Fallback(reason: "\(name): \(message)", damaged: false) }
            if step.state == .ended { break }
        }
        guard produced == wanted else { throw Fallback(reason: "\(name): its data ends before its declared size", damaged: false) }
        return output
    }

    /// Copies (stored) or inflates (deflated) the whole entry into the writer; returns its CRC-32.
    /// The limits are the streaming read's: per entry, in total, and the expansion ratio.
    private func copyEntry(fd: Int32, entry: ZipDirectory.Entry, dataStart: Int64, path: String, name: String,
                           writer: ExtractionWriter, extractedBytes: inout Int64) throws -> UInt32 {
        let inputSize = 1 << 20
        let input = UnsafeMutableRawPointer.allocate(byteCount: inputSize, alignment: 64)
        defer { input.deallocate() }
        let outputSize = ExtractionWriter.bufferSize
        let output = UnsafeMutableRawPointer.allocate(byteCount: outputSize, alignment: 64)
        defer { output.deallocate() }
        let inflater = entry.method == 8 ? try Inflater(name: name) : nil
        var crc: UInt32 = 0
        var size: Int64 = 0
        var consumed: Int64 = 0
        var ended = false

        func emit(_ bytes: UnsafeRawPointer, _ count: Int) throws {
            guard count > 0 else { return }
            guard Int64(count) <= entry.uncompressedSize - size else {
                throw Fallback(reason: "\(name): it inflates to more than the \(entry.uncompressedSize) bytes its central directory entry says", damaged: false)
            }
            crc = Self.crc32(crc, bytes, count)
            writer.write(bytes, count: count, at: size)
            size += Int64(count)
            extractedBytes += Int64(count)
            try checkExtracted(size: size, compressed: consumed, extractedBytes: extractedBytes, path: path)
        }

        while consumed < entry.compressedSize && !ended {
            let take = Int(min(Int64(inputSize), entry.compressedSize - consumed))
            guard Self.preadInto(fd, input, at: dataStart + consumed, count: take) else {
                throw Fallback(reason: "\(name): its data could not be read", damaged: false)
            }
            consumed += Int64(take)
            guard let inflater else {
                try emit(input, take)
                continue
            }
            var offered = UnsafeRawBufferPointer(start: input, count: take)
            while true {
                let step = inflater.run(input: offered, output: output, capacity: outputSize)
                if step.consumed == 0 && step.produced == 0 && step.state == .more && !offered.isEmpty {
                    throw Fallback(reason: "\(name): its DEFLATE stream could not be decoded further", damaged: false)
                }
                offered = UnsafeRawBufferPointer(rebasing: offered[step.consumed...])
                try emit(output, step.produced)
                if case .failed(let message) = step.state { throw Fallback(reason: "\(name): \(message)", damaged: false) }
                if step.state == .ended {
                    ended = true
                    // Bytes of the entry left after the end of its DEFLATE stream: libarchive has its own say.
                    if offered.count > 8 || entry.compressedSize - consumed > 0 {
                        throw Fallback(reason: "\(name): its DEFLATE stream ends before its compressed size", damaged: false)
                    }
                    break
                }
                if offered.isEmpty && step.produced < outputSize { break }
            }
        }
        if inflater != nil && !ended { throw Fallback(reason: "\(name): its DEFLATE stream is cut short", damaged: false) }
        guard size == entry.uncompressedSize else {
            throw Fallback(reason: "\(name): it holds \(size) bytes where its central directory entry says \(entry.uncompressedSize)", damaged: false)
        }
        return crc
    }

    /// Removes everything extracted so far from the private output folder.
    private func emptyOutput() throws {
        let fm = FileManager.default
        for child in (try? fm.contentsOfDirectory(atPath: output.path)) ?? [] {
            try fm.removeItem(atPath: output.appendingPathComponent(child).path)
        }
    }

    static func pread(_ fd: Int32, at offset: Int64, count: Int) -> [UInt8]? {
        guard offset >= 0, count >= 0 else { return nil }
        var bytes = [UInt8](repeating: 0, count: count)
        let ok = bytes.withUnsafeMutableBytes { preadInto(fd, $0.baseAddress!, at: offset, count: count) }
        return ok ? bytes : nil
    }

    /// Reads exactly `count` bytes at `offset`; false on an error or a short file.
    static func preadInto(_ fd: Int32, _ buffer: UnsafeMutableRawPointer, at offset: Int64, count: Int) -> Bool {
        var done = 0
        while done < count {
            let n = Foundation.pread(fd, buffer + done, count - done, off_t(offset) + off_t(done))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return false }
            done += n
        }
        return true
    }

    static func crc32(_ crc: UInt32, _ bytes: UnsafeRawPointer, _ count: Int) -> UInt32 {
        #if canImport(CISAL)
        return crc32_gzip_refl(crc, bytes.assumingMemoryBound(to: UInt8.self), UInt64(count))
        #else
        var crc = UInt(crc)
        var p = bytes.assumingMemoryBound(to: UInt8.self)
        var left = count
        while left > 0 {
            let piece = min(left, Int(UInt32.max))
            crc = CZlib.crc32(crc, p, uInt(piece))
            p += piece
            left -= piece
        }
        return UInt32(truncatingIfNeeded: crc)
        #endif
    }
}

/// Raw DEFLATE decoding a piece at a time: ISA-L's igzip where it is built in (Linux), zlib elsewhere.
private final class Inflater {
    enum State: Equatable { case more, ended, failed(String) }
    struct Step { var consumed: Int; var produced: Int; var state: State }

    #if canImport(CISAL)
    private let state = UnsafeMutablePointer<inflate_state>.allocate(capacity: 1)

    init(name: String) throws {
        isal_inflate_init(state)
        state.pointee.crc_flag = UInt32(ISAL_DEFLATE)
    }

    deinit { state.deallocate() }

    func run(input: UnsafeRawBufferPointer, output: UnsafeMutableRawPointer, capacity: Int) -> Step {
        state.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
        state.pointee.avail_in = UInt32(input.count)
        state.pointee.next_out = output.assumingMemoryBound(to: UInt8.self)
        state.pointee.avail_out = UInt32(capacity)
        let status = isal_inflate(state)
        let step = Step(consumed: input.count - Int(state.pointee.avail_in), produced: capacity - Int(state.pointee.avail_out), state: .more)
        if status < 0 { return Step(consumed: step.consumed, produced: step.produced, state: .failed(GzipSource.describe(status))) }
        if state.pointee.block_state == ISAL_BLOCK_FINISH { return Step(consumed: step.consumed, produced: step.produced, state: .ended) }
        return step
    }
    #else
    private var stream = z_stream()

    init(name: String) throws {
        guard storelens_inflateInit2(&stream, -15) == Z_OK else { throw ArchiveError.unsupported(path: name, detail: "zlib could not start") }
    }

    deinit { inflateEnd(&stream) }

    func run(input: UnsafeRawBufferPointer, output: UnsafeMutableRawPointer, capacity: Int) -> Step {
        stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: UInt8.self))
        stream.avail_in = uInt(input.count)
        stream.next_out = output.assumingMemoryBound(to: UInt8.self)
        stream.avail_out = uInt(capacity)
        let status = inflate(&stream, Z_NO_FLUSH)
        let consumed = input.count - Int(stream.avail_in), produced = capacity - Int(stream.avail_out)
        switch status {
        case Z_STREAM_END: return Step(consumed: consumed, produced: produced, state: .ended)
        case Z_OK, Z_BUF_ERROR: return Step(consumed: consumed, produced: produced, state: .more)
        default: return Step(consumed: consumed, produced: produced, state: .failed(stream.msg.map { String(cString: $0) } ?? "invalid DEFLATE data"))
        }
    }
    #endif
}
