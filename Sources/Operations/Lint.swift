import Acquisition
import CoreDataStore
import Findings
import Foundation
import ModelReview

extension Storelens {
    /// What `storelens lint` takes besides its inputs.
    public struct LintOptions: Sendable {
        public var input: InputOptions
        /// `--model`: the model to lint (alone when there are no inputs), or the model of stores
        /// without a cached one.
        public var model: String?

        public init(input: InputOptions = InputOptions(), model: String? = nil) {
            self.input = input
            self.model = model
        }
    }

    /// One model linted: a store's, or a model file's.
    public struct LintedModel: Sendable {
        /// The store's display path, or the model file as given.
        public let subject: String
        public let model: StoreModel
        public let findings: [Finding]
    }

    /// What `storelens lint` found.
    public struct LintResult: Sendable {
        public var models: [LintedModel]
        /// Inputs that were left out, and why (a plain SQLite database has no model to lint).
        public var notes: [String]
        public var findings: [Finding] { models.flatMap(\.findings) }
    }

    /// `storelens lint`: whether each model is ready for CloudKit (`NSPersistentCloudKitContainer`'s
    /// rules), for every Core Data store of `inputs`, or for `options.model` alone when `inputs` is empty.
    public static func lint(_ inputs: [String], _ options: LintOptions = LintOptions()) throws -> LintResult {
        if inputs.isEmpty, let model = options.model { return try lint(model: model) }
        return try reading(options.input) { try lint(inputs, options, in: $0) }
    }

    /// A model file (`.xcdatamodeld`, `.xcdatamodel`, `.momd`, `.mom`) linted on its own.
    public static func lint(model path: String) throws -> LintResult {
        let url = URL(fileURLWithPath: path)
        let read = ["momd", "mom"].contains(url.pathExtension) ? try CompiledModelReader.read(url) : try XcodeModelReader.read(url)
        return LintResult(models: [LintedModel(subject: path, model: read, findings: CloudKitLint.lint(model: read, name: path))], notes: [])
    }

    /// `lint(_:_:)` of stores through a session `reading` opened, which finishes it.
    public static func lint(_ inputs: [String], _ options: LintOptions, in session: EvidenceSession) throws -> LintResult {
        var result = LintResult(models: [], notes: [])
        let input = options.input
        for store in try session.stores(from: inputs, select: input.store, options: input.open, limits: input.limits) {
            try StoreReading.named(store.displayPath) {
                do {
                    let opened = try OpenedStore.open(store.copy, displayPath: store.displayPath, xcodeModel: options.model.map { URL(fileURLWithPath: $0) })
                    result.models.append(LintedModel(subject: store.displayPath, model: opened.model, findings: try lint(opened)))
                } catch ModelError.notCoreData {
                    result.notes.append("\(store.displayPath) is plain SQLite, not a Core Data store; it has no model to lint.")
                }
            }
        }
        return result
    }

    /// One Core Data store's CloudKit lint, as `lint` gives it for each store (and `report --lint`).
    public static func lint(_ opened: OpenedStore) throws -> [Finding] {
        try CloudKitLint.lint(opened)
    }
}
