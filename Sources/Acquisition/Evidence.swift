import Foundation
import StoreFormats

/// What a file looked like when storelens first touched it: enough to prove afterwards that
/// it was not changed.
public struct FileEvidence: Equatable, Sendable {
    public let path: String
    public let size: Int
    public let sha256: String
    public let modified: Date?

    /// Hashes the file at `url`.
    public static func record(_ url: URL) throws -> FileEvidence {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        let size = (attributes[.size] as? NSNumber)?.intValue ?? 0
        return FileEvidence(path: url.path, size: size, sha256: try SHA256.hexOfFile(at: url),
                            modified: attributes[.modificationDate] as? Date)
    }
}

/// The evidence for a set of input files, taken before reading and checked after.
public struct EvidenceLedger: Sendable {
    public private(set) var entries: [FileEvidence] = []

    public init() {}

    public mutating func record(_ urls: [URL]) throws {
        for url in urls where !entries.contains(where: { $0.path == url.path }) {
            do {
                entries.append(try FileEvidence.record(url))
            } catch {
                throw AcquisitionError.unreadable(path: url.path, reason: "\(error.localizedDescription)")
            }
        }
    }

    /// Re-hashes every recorded file; throws if any changed. A change is a bug in storelens.
    public func verifyUnchanged() throws {
        for before in entries {
            let after = try FileEvidence.record(URL(fileURLWithPath: before.path))
            if after.sha256 != before.sha256 || after.size != before.size {
                throw AcquisitionError.evidenceChanged(path: before.path, before: before.sha256, after: after.sha256)
            }
        }
    }
}
