import StoreFormats

/// The 100 bytes of a SQLite database header, made here field by field.
enum DatabaseHeaderBytes {
    /// A minimal valid header; callers patch fields.
    static func minimal(pageSize raw: UInt16 = 4096, write: UInt8 = 1, read: UInt8 = 1) -> [UInt8] {
        var bytes = DatabaseHeader.magic + [UInt8](repeating: 0, count: 84)
        bytes[16] = UInt8(raw >> 8)
        bytes[17] = UInt8(raw & 0xFF)
        bytes[18] = write
        bytes[19] = read
        return bytes
    }
}
