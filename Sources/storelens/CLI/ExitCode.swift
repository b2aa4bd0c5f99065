import StoreFormats

/// storelens' exit codes. They are part of its stable interface (docs/exit-codes.md).
enum ExitCode: Int32 {
    /// The command did what was asked and found nothing to report.
    case success = 0
    /// The command ran and reported findings (checks, audits).
    case findings = 1
    /// The command line or an input was wrong: a missing file, not a store, a damaged store.
    case usageOrInput = 2
    /// storelens itself failed.
    case internalError = 3
}

extension ExitCode {
    /// The exit code of an error of this class.
    init(_ errorClass: ErrorClass) {
        self = errorClass == .ours ? .internalError : .usageOrInput
    }
}
