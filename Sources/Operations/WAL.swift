import Acquisition
import CoreDataStore
import Foundation
import StoreFormats
import WALForensics

extension Storelens {
    /// What `storelens wal` takes for its report.
    public struct WALOptions: Sendable {
        public var input: InputOptions
        /// False: `--no-integrity-check`, no quick_check of the WAL view (faster on very large stores).
        public var integrityCheck: Bool
        /// Where the frame walk's and the analysis's durations go (`make bench`).
        public var timings: Timings?

        public init(input: InputOptions = InputOptions(), integrityCheck: Bool = true, timings: Timings? = nil) {
            self.input = input
            self.integrityCheck = integrityCheck
            self.timings = timings
        }
    }

    /// `storelens wal`: what each store's -wal and -shm hold (transactions, the tables they
    /// wrote, frames beyond the last commit, the -shm state, warnings).
    public static func wal(_ inputs: [String], _ options: WALOptions = WALOptions()) throws -> [WALAnalysis] {
        try reading(options.input) { try wal(inputs, options, in: $0) }
    }

    /// `wal(_:_:)` through a session `reading` opened, which finishes it.
    public static func wal(_ inputs: [String], _ options: WALOptions, in session: EvidenceSession) throws -> [WALAnalysis] {
        var input = options.input
        // A -wal that cannot belong is what this analysis is for: it reads it and says so (wal-may-not-belong).
        input.open.foreignWAL = .read
        return try session.stores(from: inputs, select: input.store, options: input.open, limits: input.limits).map { store in
            try wal(store, integrityCheck: options.integrityCheck, timings: options.timings)
        }
    }

    /// One store's WAL analysis, as `wal` gives it for each store it reads (and `report`, which
    /// leaves the quick_check to the checks on a Core Data store).
    public static func wal(_ store: AcquiredStore, integrityCheck: Bool = true, timings: Timings? = nil) throws -> WALAnalysis {
        let evidence = try WALEvidence(copy: store.copy, displayPath: store.displayPath)
        let clock = ContinuousClock()
        var analysis: WALAnalysis?
        let analyzing = try clock.measure {
            analysis = try WALAnalyzer.analyze(evidence, options: .init(integrityCheck: integrityCheck))
        }
        if let timings, let walData = evidence.walData {
            // For `make bench`: the frame walk alone (header, salts, cumulative checksums), run again.
            var frames = 0
            let scanning = clock.measure { frames = WAL(data: walData).validFrameCount }
            timings.record("wal-bytes=\(walData.count) valid-frames=\(frames) wal-scan-seconds=\(Timings.seconds(scanning)) analyze-seconds=\(Timings.seconds(analyzing))")
        }
        return analysis!
    }
}
