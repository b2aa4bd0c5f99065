import Foundation
import StoreFormats

/// The file a `report` batch writes for one input (`--out-dir`, docs/report.md "Many cases"):
/// named after the input so a person finds it, and unique so two inputs never share one.
///
/// The input's last path component with every character but ASCII letters, digits, `.`, `_` and
/// `-` made `_` (a path from a ticket may hold anything: slashes, control characters, newlines,
/// names that are not UTF-8), leading `.` and `-` dropped (no hidden files, nothing a shell takes
/// for an option), cut to 80 characters; then `-`, the first 10 hex digits of the SHA-256 of the
/// input's path exactly as given (the line's `input`), and `.html`. Two inputs with one name in
/// different folders get different files; the same input always gets the same file, so
/// `--resume` and every shard agree on it. In a shell:
/// `printf %s tickets/4711.tar.gz | sha256sum | cut -c1-10`.
public enum BatchReportName {
    public static let baseLimit = 80
    public static let hashDigits = 10

    public static func fileName(for input: String) -> String {
        var component = Substring(input)
        while component.hasSuffix("/") { component = component.dropLast() }
        if let slash = component.lastIndex(of: "/") { component = component[component.index(after: slash)...] }
        var base = String(String.UnicodeScalarView(component.unicodeScalars.map { scalar in
            switch scalar {
            case "a"..."z", "A"..."Z", "0"..."9", ".", "_", "-": return scalar
            default: return "_"
            }
        }))
        while let first = base.first, first == "." || first == "-" { base.removeFirst() }
        if base.count > baseLimit { base = String(base.prefix(baseLimit)) }
        if base.isEmpty { base = "input" }
        return base + "-" + SHA256.hex(Data(input.utf8)).prefix(hashDigits) + ".html"
    }
}
