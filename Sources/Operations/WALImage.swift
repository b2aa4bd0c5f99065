import Acquisition
import Foundation
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

    /// `storelens wal --as-of N --out FILE`: the one store of `inputs` as of commit `commit`
    /// (nil: the last commit). Writing it is the caller's: the command writes it where `--out` says.
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
}
