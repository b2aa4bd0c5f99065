import Acquisition
import CoreDataStore
import Foundation
import OutputFiles
import SQLiteAccess
import StoreFormats

extension Storelens {
    /// What `storelens export` takes besides its input.
    public struct ExportOptions: Sendable {
        public var input: InputOptions
        /// `--out`: the SQLite file to write (never over an existing file unless `force`, never over evidence).
        public var output: String
        public var force: Bool
        /// `--with-external-data`: copy each external-data file's bytes into the export.
        public var withExternalData: Bool
        /// `--model`: the app's Xcode model, for stores without a cached one.
        public var xcodeModel: URL?
        /// Written into the export's `_storelens` table as the tool that made it.
        public var toolVersion: String

        public init(output: String, input: InputOptions = InputOptions(), force: Bool = false, withExternalData: Bool = false,
                    xcodeModel: URL? = nil, toolVersion: String) {
            self.input = input
            self.output = output
            self.force = force
            self.withExternalData = withExternalData
            self.xcodeModel = xcodeModel
            self.toolVersion = toolVersion
        }
    }

    /// What `storelens export` wrote.
    public struct ExportResult: Sendable {
        /// The store, by display path.
        public let path: String
        /// The file written.
        public let output: String
        /// Where the model came from (`cache`, `xcdatamodel`, `inferred`, or the XML store's format).
        public let modelSource: String
        public let summary: DecodedExport.Summary
    }

    /// `storelens export`: the one store of `input` decoded into a new SQLite file, one table per
    /// entity with readable columns, with where it came from (hashes, tool) in `_storelens`.
    public static func export(_ input: String, _ options: ExportOptions) throws -> ExportResult {
        try reading(options.input) { try export(input, options, in: $0) }
    }

    /// `export(_:_:)` through a session `reading` opened; the export finishes it itself (the
    /// originals are checked against their copies before anything is written).
    public static func export(_ input: String, _ options: ExportOptions, in session: EvidenceSession) throws -> ExportResult {
        // Before any work: an existing --out without --force is refused at once.
        try OutputFile.checkWritable(options.output, force: options.force)
        let (displayPath, modelSource, writeExport) = try exportWriter(input, options, in: session)
        var provenance: [(String, String)] = [
            ("storelensVersion", options.toolVersion),
            ("input", input),
            ("store", displayPath),
            ("exportedAt", ValueDecoder.iso8601(referenceSeconds: Date().timeIntervalSinceReferenceDate)),
        ]
        for file in session.ledger.entries {
            provenance.append(("sha256 " + file.path, file.sha256 ?? "(not hashed)"))
            provenance.append(("size " + file.path, String(file.size)))
        }
        try session.finish(keepingScratch: options.withExternalData)
        var summary: DecodedExport.Summary?
        try OutputFile.place(at: options.output, force: options.force, originals: session.ledger.entries.map(\.path)) { _, temporary in
            do {
                summary = try writeExport(temporary, provenance)
            } catch DecodedExportError.outputFailed(_, let reason) {
                // Named as the user named it: the temporary file beside it is gone with the failure.
                throw DecodedExportError.outputFailed(path: options.output, reason: reason)
            } catch DecodedExportError.statementRefused(_, let reason) {
                throw DecodedExportError.statementRefused(path: options.output, reason: reason)
            }
        }
        return ExportResult(path: displayPath, output: options.output, modelSource: modelSource, summary: summary ?? DecodedExport.Summary(tables: []))
    }

    /// The store's display path, its model's source, and what writes its export into a file.
    static func exportWriter(_ input: String, _ options: ExportOptions, in session: EvidenceSession) throws
        -> (String, String, (String, [(String, String)]) throws -> DecodedExport.Summary) {
        switch try session.singleStoreOrAtomic(input, options.input) {
        case .sqlite(let acquired):
            let opened = try OpenedStore.open(acquired.copy, displayPath: acquired.displayPath, xcodeModel: options.xcodeModel)
            return (acquired.displayPath, opened.model.source.rawValue,
                    { try DecodedExport.write(opened, to: $0, provenance: $1, withExternalData: options.withExternalData) })
        case .atomic(let store):
            if options.xcodeModel != nil { throw InputError(message: "--model is not used for a \(store.format.title) (\(store.displayPath)): its values carry their own types; drop --model.") }
            let contents = try AtomicStoreReader.read(store.copy, format: store.format, displayPath: store.displayPath)
            if store.format == .coreDataBinary {
                throw InputError(message: "\(store.displayPath) is a \(store.format.title), whose objects storelens does not decode (their archived layout is not documented); `storelens inspect` shows its metadata and model.")
            }
            return (store.displayPath, store.format.rawValue, { try AtomicStoreExport.write(contents, displayPath: store.displayPath, to: $0, provenance: $1) })
        }
    }
}
