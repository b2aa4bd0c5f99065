import Foundation

/// The first header of a rollback `-journal`: what SQLite reads before it rolls the journal back.
///
/// Big-endian after the 8-byte magic: the record count, the checksum nonce, the database's size
/// in pages before the interrupted transaction, the sector size (the header's padded length) and
/// the page size. SQLite ignores a journal whose sector or page size is not a power of two in its
/// range; otherwise it first truncates or extends the database to the page count (sparse), so a
/// forged count could grow our copy to terabytes. Each value is checked against the files' sizes.
struct JournalHeader {
    static let length = 28

    let recordCount: UInt32
    let databasePages: UInt32
    let sectorSize: UInt32
    let pageSize: UInt32

    /// `head`: the journal's first bytes (shorter: every field reads as 0).
    init(_ head: Data) {
        let bytes = [UInt8](head.prefix(Self.length)) + [UInt8](repeating: 0, count: max(0, Self.length - head.count))
        func u32(_ at: Int) -> UInt32 { bytes[at ..< at + 4].reduce(0) { $0 << 8 | UInt32($1) } }
        recordCount = u32(8)
        databasePages = u32(16)
        sectorSize = u32(20)
        pageSize = u32(24)
    }

    /// Whether SQLite plays this journal back at all (sizes it accepts).
    var isPlayable: Bool {
        (512...65536).contains(pageSize) && pageSize & (pageSize - 1) == 0 && (32...65536).contains(sectorSize) && sectorSize & (sectorSize - 1) == 0
    }

    /// The database's size in bytes before the interrupted transaction, as the header says.
    var databaseBytes: Int64 {
        let (bytes, overflow) = Int64(databasePages).multipliedReportingOverflow(by: Int64(pageSize))
        return overflow ? .max : bytes
    }

    /// Refuses a playable header whose database size cannot be true: every page of the rolled-back
    /// file comes from the main file or from one of the journal's records (SQLite journals every
    /// page a transaction truncates away), so it can never be larger than both files together.
    func check(mainBytes: Int64, journalBytes: Int64, journal: String) throws(AcquisitionError) {
        guard isPlayable else { return }
        let available = mainBytes.addingReportingOverflow(journalBytes)
        guard !available.overflow, databaseBytes <= available.partialValue else {
            throw .journalSizeImpossible(journal: journal, pages: Int64(databasePages), pageSize: Int(pageSize), availableBytes: mainBytes &+ journalBytes)
        }
    }
}
