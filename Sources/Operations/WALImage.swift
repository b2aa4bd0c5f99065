import Acquisition
import Foundation
import OutputFiles
import WALForensics

extension Storelens {
    /// A store as it stood after one WAL commit, as an ordinary SQLite database.
    public struct PointInTimeImage: Sendable {
        /// The store, by display path.
        public let store: String
        /// The commit the image is as of (0: the main file alone).
        public let commit: Int
        /// That commit's commit frame (nil for commit 0).
        public let commitFrame: Int?
        public let pageSize: Int
        /// The database file's bytes; SQLite has read them before they are returned.
        public let bytes: Data
    }

    /// The one store of `inputs` as of commit `commit` (nil: the last commit), held in memory
    /// (`walImage(_:commit:into:force:_:)` writes it to a file, as `wal --as-of N --out FILE` does).
    public static func walImage(_ inputs: [String], commit: Int?, _ input: InputOptions = InputOptions()) throws -> PointInTimeImage {
        try reading(input) { try walImage(inputs, commit: commit, input, in: $0) }
    }

    /// `walImage(_:commit:_:)` through a session `reading` opened, which finishes it.
    public static func walImage(_ inputs: [String], commit: Int?, _ input: InputOptions, in session: EvidenceSession) throws -> PointInTimeImage {
        let stores = try session.stores(from: inputs, select: input.store, options: input.open, limits: input.limits)
        guard stores.count == 1, let store = stores.first else {
            throw InputError(message: "--out writes one file, but the input holds \(stores.count) stores (\(stores.prefix(5).map(\.displayPath).joined(separator: ", "))); choose one with --store.")
        }
        let evidence = try WALEvidence(copy: store.copy, displayPath: store.displayPath)
        let image = try PointInTime.image(evidence, commit: commit)
        // Prove SQLite reads the image before anyone writes it anywhere.
        _ = try PointInTime.open(image: image, name: store.displayPath, commit: commit)
        let chosen = commit ?? evidence.commitCount
        return PointInTimeImage(store: store.displayPath, commit: chosen,
                                commitFrame: chosen == 0 ? nil : evidence.wal?.commitFrame(ofCommit: chosen),
                                pageSize: evidence.header?.pageSize ?? evidence.wal?.pageSize ?? 0, bytes: image)
    }

    /// `storelens wal --as-of N --out FILE`: `walImage(_:commit:_:)` written to `output` (never over
    /// an existing file unless `force`, never over evidence).
    public static func walImage(_ inputs: [String], commit: Int?, into output: String, force: Bool,
                                _ input: InputOptions = InputOptions()) throws -> PointInTimeImage {
        try reading(input) { try walImage(inputs, commit: commit, into: output, force: force, input, in: $0) }
    }

    /// `walImage(_:commit:into:force:_:)` through a session `reading` opened; it finishes it itself:
    /// an existing `output` is refused before any work, and the image is written only once the
    /// originals are checked unchanged.
    public static func walImage(_ inputs: [String], commit: Int?, into output: String, force: Bool, _ input: InputOptions,
                                in session: EvidenceSession) throws -> PointInTimeImage {
        try OutputFile.checkWritable(output, force: force)
        let image = try walImage(inputs, commit: commit, input, in: session)
        try session.finish()
        try OutputFile.write(image.bytes, to: output, force: force, originals: session.ledger.entries.map(\.path))
        return image
    }
}
