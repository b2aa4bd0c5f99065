import Foundation
import Reports
import StoreFormats

/// The progress line on stderr: shown only when stderr is a terminal, never with `--quiet`,
/// redrawn in place (`\r` + erase line) and cut to the terminal's width. Text from the input
/// (archive and file names) is sanitised like every other terminal string.
///
/// `STORELENS_PROGRESS=always` shows it even when stderr is not a terminal, at once and on every
/// update (for debugging and for the tests); `STORELENS_PROGRESS=never` hides it.
enum TerminalProgress {
    static func reporter(quiet: Bool, environment: [String: String] = ProcessInfo.processInfo.environment) -> ProgressReporter {
        let mode = environment["STORELENS_PROGRESS"] ?? "auto"
        if quiet || mode == "never" { return .silent }
        if mode == "always" {
            return ProgressReporter(interval: .zero, delay: .zero, sink: draw)
        }
        guard isatty(STDERR_FILENO) == 1, environment["TERM"] != "dumb" else { return .silent }
        return ProgressReporter(sink: draw)
    }

    @Sendable static func draw(_ update: ProgressReporter.Update?) {
        var line = "\r\u{1B}[2K"
        if let update {
            var text = TextTable.sanitized(update.text)
            // One line that fits: a wrapped line could not be redrawn in place.
            if let columns = columns() {
                let width = max(20, columns - 1)
                if text.count > width { text = String(text.prefix(width - 1)) + "…" }
            }
            line += text
        }
        let bytes = Array(line.utf8)
        _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }

    /// The terminal's width, when stderr is one (or COLUMNS says).
    static func columns() -> Int? {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return Int(ProcessInfo.processInfo.environment["COLUMNS"] ?? "")
    }
}
