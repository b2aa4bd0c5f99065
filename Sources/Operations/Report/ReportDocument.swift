import Acquisition
import Coexistence
import CoreDataStore
import Findings
import Foundation
import StoreFormats
import WALForensics

/// Everything `storelens report` puts in its one HTML file, gathered by `Storelens.report`.
public struct ReportDocument: Sendable {
    /// One store found in the input, with what could be read of it.
    public struct StoreSection: Sendable {
        public let path: String
        public var found: FoundStore?
        public var inspection: StoreInspection?
        public var wal: WALAnalysis?
        public var timeline: HistoryTimeline?
        /// Per entity, who wrote it according to persistent history.
        public var entityWriters: [HistoryEntitySummary]
        /// The store's own findings (integrity checks, WAL warnings).
        public var findings: [Finding]
        /// What could not be read, one sentence each.
        public var problems: [String]

        public init(path: String, found: FoundStore? = nil) {
            self.path = path
            self.found = found
            entityWriters = []
            findings = []
            problems = []
        }
    }

    /// A repair plan: the steps `storelens repair` would take for the findings, in the shape the
    /// report shows them.
    public struct RepairPlan: Sendable {
        public struct Step: Sendable {
            public let store: String
            public let title: String
            public let detail: String
            /// The findings (by id) the step resolves.
            public let resolves: [String]
            public init(store: String, title: String, detail: String, resolves: [String]) {
                self.store = store
                self.title = title
                self.detail = detail
                self.resolves = resolves
            }
        }
        public var steps: [Step]
        public var note: String?
        public init(steps: [Step], note: String? = nil) {
            self.steps = steps
            self.note = note
        }
    }

    /// Caps that keep the page small and fast however large the store is.
    public struct Limits: Sendable {
        public var listRows = 500
        public var findings = 1000
        public var chartEntities = 40
        /// Stores linked one by one from the header; past this the header links a grouped index.
        public var navigationStores = 12
        public init() {}
    }

    public var inputs: [String]
    public var commandLine: String
    public var toolVersion: String
    public var generatedAt: Date
    public var inventories: [Inventory]
    public var originals: [FileEvidence]
    /// Whether every original was checked unchanged after reading (set after `session.finish()`).
    public var evidenceVerified: Bool
    public var stores: [StoreSection]
    public var manifestPath: String?
    public var audit: AuditResult?
    /// Why the audit could not run (the manifest does not fit the input), shown in its place.
    public var auditProblem: String?
    public var repairPlan: RepairPlan?
    /// Why there is no repair plan (shown in its place).
    public var repairPlanNote: String?
    public var limits = Limits()

    public init(inputs: [String], commandLine: String, toolVersion: String, generatedAt: Date = Date()) {
        self.inputs = inputs
        self.commandLine = commandLine
        self.toolVersion = toolVersion
        self.generatedAt = generatedAt
        inventories = []
        originals = []
        evidenceVerified = false
        stores = []
    }

    /// Every finding once (the audit also runs the stores' checks), errors first.
    public var allFindings: [Finding] {
        var seen: [Finding] = []
        for f in (audit?.findings ?? []) + stores.flatMap(\.findings) where !seen.contains(f) { seen.append(f) }
        return seen.bySeverity
    }
}
