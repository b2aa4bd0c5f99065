import Foundation
import Operations
import StoreFormats

/// `storelens merge`'s two views of a `BatchMerge` (`Storelens.merge`): the summary for a
/// terminal and its JSON (docs/merge.md).
public enum MergeReport: PlainView {
    public static func json(_ merge: BatchMerge) -> JSONValue {
        JSONDocument.make(schemaVersion: BatchMerge.schemaVersion, [
            ("files", .array(merge.files.map(JSONValue.string))),
            ("lines", .int(merge.lineCount)),
            ("inputs", .int(merge.inputCount)),
            ("exitCode", .int(Int(merge.exitCode))),
            ("commands", .array(merge.commands.map { c in
                .object([("command", .string(c.command)), ("inputs", .int(c.inputs)), ("ok", .int(c.ok)),
                         ("findings", .int(c.findings)), ("error", .int(c.errors)), ("exitCode", .int(Int(c.worstExitCode)))])
            })),
            ("hosts", .array(merge.hosts.map(JSONValue.string))),
            ("duplicates", .array(merge.duplicates.map { d in
                .object([("command", .string(d.command)), ("input", .string(d.input)), ("lines", .int(d.lines)),
                         ("hosts", .array(d.hosts.map(JSONValue.string)))])
            })),
            ("failed", .array(merge.failures.map { f in
                .object([("command", .string(f.command)), ("input", .string(f.input)), ("error", .string(f.error))])
            })),
            ("malformedLines", .int(merge.malformedCount)),
            ("malformed", .array(merge.malformed.map { m in
                .object([("file", .string(m.file)), ("line", .int(m.line)), ("reason", .string(m.reason))])
            })),
        ])
    }

    /// For a terminal: every name sanitised, long lists cut.
    public static func text(_ merge: BatchMerge) -> String { text(merge, listLimit: 20) }

    public static func text(_ merge: BatchMerge, listLimit: Int) -> String {
        let s = TextTable.sanitized
        var out = "merged \(plural(merge.files.count, "file")), \(plural(merge.lineCount, "line")): \(plural(merge.inputCount, "input"))\n"
        for c in merge.commands {
            out += "  \(s(c.command)): \(plural(c.inputs, "input")): \(c.ok) ok, \(c.findings) with findings, \(c.errors) failed (worst exit code \(c.worstExitCode))\n"
        }
        if !merge.hosts.isEmpty { out += "hosts: \(merge.hosts.prefix(listLimit).map(s).joined(separator: ", "))\(merge.hosts.count > listLimit ? ", …" : "")\n" }
        if merge.duplicates.isEmpty {
            out += "duplicates: none (no input has more than one line)\n"
        } else {
            out += "duplicates: \(plural(merge.duplicates.count, "input")) done more than once (the last line read counts):\n"
            for d in merge.duplicates.prefix(listLimit) {
                out += "  \(s(d.command)) \(s(d.input)): \(d.lines) lines\(d.hosts.isEmpty ? "" : " (\(d.hosts.map(s).joined(separator: ", ")))")\n"
            }
            if merge.duplicates.count > listLimit { out += "  … and \(merge.duplicates.count - listLimit) more (--format json lists them all)\n" }
        }
        if !merge.failures.isEmpty {
            out += "failed:\n"
            for f in merge.failures.prefix(listLimit) { out += "  \(s(f.command)) \(s(f.input)): \(s(f.error))\n" }
            if merge.failures.count > listLimit { out += "  … and \(merge.failures.count - listLimit) more (--format json lists them all)\n" }
        }
        return out
    }
}

