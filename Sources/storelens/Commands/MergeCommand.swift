import Foundation
import Operations
import Reports
import StoreFormats

/// `storelens merge FILE...`: the results files of a batch's shards joined into one summary.
struct MergeCommand: Command {
    static let configuration = CommandConfiguration(
        name: "merge",
        abstract: "Join the results files (--jsonl) of a batch's shards into one summary: inputs, outcomes, inputs done twice.",
        discussion: """
        Reads every line of every file given (the --jsonl results of scan, inspect, check, audit and report
        batches, one file per shard or one shared file) and sums them up per command: how many
        inputs, how many ok, with findings and failed, which hosts ran them, and every input that has
        more than one line (done twice; the last line read counts). With --out the merged results
        (one line per input, ordered by command and input) are written to a new file. The exit code
        is the batch's: the worst of every input's, and 2 when a line is not a batch line.
        """,
        arguments: [ArgumentSpec(name: "results", help: "Batch results files (JSON Lines from --jsonl).", repeating: true, optional: false)],
        options: [CommonOptions.format,
                  OptionSpec.value("--out", valueName: "file", help: "Also write the merged results, one line per input, to this new file.")],
        examples: ["storelens merge results/audit-*.jsonl",
                   "storelens merge results/*.jsonl --format json --out audit.jsonl"])

    let files: [String]
    let format: String
    let out: String?

    init(_ parsed: ParsedArguments) throws(ParseError) {
        guard !parsed.positionals.isEmpty else { throw .missingArgument("results") }
        files = parsed.positionals
        format = parsed.format
        out = parsed.value("--out")
        if let out, out.isEmpty || out == "-" { throw .invalid("--out needs a new file name for the merged results; the summary itself goes to stdout.") }
    }

    func run(_ output: Output) throws -> ExitCode {
        let merge = try Storelens.merge(files: files.map { URL(fileURLWithPath: $0) }, out: out)
        output.write(MergeReport.rendered(merge, as: format))
        // One sentence for all of them (--format json lists the first ones).
        if let first = merge.malformed.first {
            let more = merge.malformedCount - 1
            output.error("Error: \(TextTable.sanitized(first.file)) line \(first.line) is \(first.reason)"
                         + (more > 0 ? "; \(plural(more, "more line")) could not be read either" : "")
                         + "; the summary leaves them out\(out == nil ? "" : " and --out was not written"), so give merge the batch's results files only.\n")
        }
        return ExitCode(rawValue: merge.exitCode) ?? .internalError
    }
}
