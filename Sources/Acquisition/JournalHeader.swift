import Foundation

/// The first header of a rollback `-journal`: what SQLite reads before it rolls the journal back.
///
/// Big-endian after the 8-byte magic: the record count (SQLite bounds it by the file's size itself),
/// the checksum nonce, the database's size in pages before the interrupted transaction, the sector
/// size (the header's padded length) and the page size. SQLite ignores a journal whose sector or
/// page size is not a power of two in its range; otherwise it first truncates or extends the
/// database to the page count (sparse), so a forged count could grow our copy to terabytes: the
/// count times the page size is checked against the files' real sizes.
struct JournalHeader {
    static let length = 28

    let databasePages: UInt32
    let sectorSize: UInt32
    let pageSize: UInt32

    /// `head`: the journal's first bytes (shorter: every field reads as 0).
    init(_ head: Data) {
        let bytes = [UInt8](head.prefix(Self.length)) + [UInt8](repeating: 0, count: max(0, Self.length - head.count))
        func u32(_ at: Int) -> UInt32 { bytes[at ..< at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        databasePages = u32(16)
        sectorSize = u32(20)
        pageSize = u32(24)
    }

    /// The page size SQLite plays the journal back with: the header's, or the database's when the
    /// header's is 0 (as SQLite before 3.5.8 wrote it); nil when SQLite ignores the journal (a
    /// sector or page size that is not a power of two in its range).
    func playbackPageSize(databasePageSize: Int) -> Int? {
        let page = pageSize == 0 ? UInt32(clamping: databasePageSize) : pageSize
        guard (512...65536).contains(page), page & (page - 1) == 0, (32...65536).contains(sectorSize), sectorSize & (sectorSize - 1) == 0 else {
            return nil
        }
        return Int(page)
    }

    /// Refuses a playable header whose database size cannot be true: every page of the rolled-back
    /// file comes from the main file or from one of the journal's records (SQLite journals every
    /// page a transaction truncates away), so it can never be larger than both files together.
    func check(mainBytes: Int64, journalBytes: Int64, databasePageSize: Int, journal: String) throws(AcquisitionError) {
        guard let page = playbackPageSize(databasePageSize: databasePageSize) else { return }
        // At most 2^32 pages of 64 KiB: 2^48 bytes, far from overflowing; checked all the same.
        let claimed = Int64(databasePages).multipliedReportingOverflow(by: Int64(page))
        let available = mainBytes.addingReportingOverflow(journalBytes)
        guard !claimed.overflow, !available.overflow, claimed.partialValue <= available.partialValue else {
            throw .journalSizeImpossible(journal: journal, pages: Int64(databasePages), pageSize: page, availableBytes: mainBytes &+ journalBytes)
        }
    }
}
