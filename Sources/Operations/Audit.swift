import Acquisition
import Coexistence
import Foundation

extension Storelens {
    /// What `storelens audit` takes besides its inputs and manifest.
    public struct AuditOptions: Sendable {
        public var input: InputOptions
        /// The manifest's file, when it came from one: hashed with the evidence, before and after.
        public var manifestFile: URL?

        public init(input: InputOptions = InputOptions(), manifestFile: URL? = nil) {
            self.input = input
            self.manifestFile = manifestFile
        }
    }

    /// `storelens audit`: a migration checked against its manifest (docs/manifest.md): who wrote
    /// each entity, and whether the legacy side's records reached the new store once each.
    /// `inputs` is read as one case (one container, or the stores of one test).
    public static func audit(_ inputs: [String], manifest: Manifest, _ options: AuditOptions = AuditOptions()) throws -> AuditResult {
        try reading(options.input) { try audit(inputs, manifest: manifest, options, in: $0) }
    }

    /// `audit(_:manifest:_:)` through a session `reading` opened, which finishes it.
    public static func audit(_ inputs: [String], manifest: Manifest, _ options: AuditOptions, in session: EvidenceSession) throws -> AuditResult {
        if let file = options.manifestFile { try session.record([file]) }
        var auditor = Auditor(manifest: manifest, session: session)
        auditor.openOptions = options.input.open
        auditor.limits = options.input.limits
        return try auditor.run(inputs: inputs)
    }
}
