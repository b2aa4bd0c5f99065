import Foundation

/// External binary storage as Core Data writes it, measured on a real store: the column's first
/// byte is a tag, `0x01` followed by the bytes kept in the row, or `0x02` followed by the file's
/// name (the 36-character uppercase UUID) and one NUL byte, 38 bytes in all; the file, holding
/// the raw bytes, is `.<store name without extension>_SUPPORT/_EXTERNAL_DATA/<UUID>`.
extension StoreWriter {
    /// The support folder Core Data keeps beside the store: `.<name without extension>_SUPPORT`.
    public var supportFolder: URL {
        url.deletingLastPathComponent().appendingPathComponent(".\(url.deletingPathExtension().lastPathComponent)_SUPPORT")
    }

    /// Writes `bytes` to a new file in `_EXTERNAL_DATA/` and returns the column value that names it.
    public func externalData(_ bytes: Data, name: UUID = UUID()) throws -> BuilderValue {
        let folder = supportFolder.appendingPathComponent("_EXTERNAL_DATA")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let file = folder.appendingPathComponent(name.uuidString)
        guard !FileManager.default.fileExists(atPath: file.path) else { throw BuilderError.exists(file.path) }
        try bytes.write(to: file)
        return Self.externalReference(name)
    }

    /// The column value naming an external file (`0x02` + ASCII UUID + NUL), without writing the file.
    public static func externalReference(_ name: UUID) -> BuilderValue {
        .data(Data([0x02]) + Data(name.uuidString.utf8) + Data([0]))
    }

    /// The column value of small data kept in the row of an external-storage attribute (`0x01` + bytes).
    public static func inlineExternal(_ bytes: Data) -> BuilderValue {
        .data(Data([0x01]) + bytes)
    }
}
