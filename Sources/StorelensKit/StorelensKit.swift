// StorelensKit: storelens as a library, for an app's own tests (docs/library.md).
//
// `import StorelensKit` brings every capability's module; `Storelens` (in Operations) is the short
// way in: one call per command, the very call the command makes.
@_exported import Acquisition
@_exported import Checks
@_exported import Coexistence
@_exported import CoreDataStore
@_exported import Findings
@_exported import ModelReview
@_exported import Operations
@_exported import OutputFiles
@_exported import Repair
@_exported import Reports
@_exported import SQLiteAccess
@_exported import StoreFormats
@_exported import WALForensics
