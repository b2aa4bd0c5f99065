import Reports

extension WALCommand {
    /// The report's formats, then those of --diff's changed records the report has not.
    static let formats = DocumentFormats.names + RecordDiffWriter.Format.allCases.map(\.rawValue).filter { !DocumentFormats.names.contains($0) }

    /// What `wal` is asked, from its options: the report, the store as of a commit written to a
    /// file, the rows changed between two commits, or every commit's changes.
    enum Mode {
        case report
        case write(commit: Int?, output: String, force: Bool)
        case diff(from: Int?, to: Int?)
        case each

        /// The mode the options choose; options of another mode, and a format the mode has no
        /// view in, are refused.
        init(_ parsed: ParsedArguments, format: String) throws(ParseError) {
            let asOf = try parsed.commit("--as-of")
            let from = try parsed.commit("--from")
            let to = try parsed.commit("--to")
            let out = parsed.value("--out")
            if parsed.flag("--diff") {
                guard asOf == nil, out == nil else {
                    throw .invalid("--diff cannot be combined with --as-of or --out; use --from and --to to choose the commits to compare.")
                }
                if parsed.flag("--each") {
                    guard from == nil, to == nil else {
                        throw .invalid("--each compares every commit with the one before it; leave out --from and --to (or drop --each to compare two commits).")
                    }
                    self = .each
                } else {
                    self = .diff(from: from, to: to)
                }
            } else {
                guard from == nil, to == nil else { throw .invalid("--from and --to choose the commits for --diff; add --diff.") }
                guard !parsed.flag("--each") else { throw .invalid("--each lists every commit's changes; add --diff.") }
                if let out {
                    guard !out.isEmpty else { throw .invalid("--out needs a file name.") }
                    self = .write(commit: asOf, output: out, force: parsed.flag("--force"))
                } else if asOf != nil {
                    throw .invalid("--as-of needs --out FILE to write the database as of that commit (or use 'storelens rows … --as-of N' to read it).")
                } else {
                    self = .report
                }
            }
            if parsed.flag("--force"), out == nil { throw .invalid("--force replaces the file --out names; add --out FILE (or drop --force).") }
            if format == "markdown" {
                guard case .report = self else { throw .invalid("--format markdown is for the WAL report; use text, json, jsonl or csv with --diff, and text or json with --out.") }
            }
            if format == "jsonl" || format == "csv" {
                switch self {
                case .diff, .each: break
                default: throw .invalid("--format \(format) lists changed records; use it with --diff (the report and --out take text or json).")
                }
            }
        }
    }
}
