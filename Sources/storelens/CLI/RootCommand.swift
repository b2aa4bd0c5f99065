import Acquisition
import CBuildInfo
import CoreDataStore
import Foundation
import Operations
import OutputFiles
import StoreFormats

/// The root command: dispatches to subcommands, prints help and version, and funnels errors.
enum RootCommand {
    /// Every subcommand, in the order help lists them.
    static let commands: [any Command.Type] = [ScanCommand.self, InspectCommand.self, SchemaCommand.self, RowsCommand.self, HistoryCommand.self, WALCommand.self, RecoverCommand.self, ExportCommand.self, TimelineCommand.self, AuditCommand.self, CheckCommand.self, MigrationCommand.self, LintCommand.self, RepairCommand.self, ReportCommand.self, MergeCommand.self]
    static let version = "0.1.0"
    /// The commit `make dist` built from, or "unknown".
    static let commit = String(cString: storelens_build_commit())

    /// `--generate-completion-script SHELL` and `--generate-manual [SUBCOMMAND]`: printed to stdout
    /// (installers and `make dist` redirect them), made from the commands' own configurations.
    static func generated(_ option: String, _ rest: [String], to output: Output) -> ExitCode {
        let configurations = commands.map { $0.configuration }
        if option == "--generate-completion-script" {
            guard let shell = rest.first, rest.count == 1, let script = CompletionScripts.script(for: shell, commands: configurations) else {
                return Diagnostics.report(ParseError.invalid("--generate-completion-script takes one shell: \(CompletionScripts.shells.joined(separator: ", ")) (for example: storelens --generate-completion-script bash > /etc/bash_completion.d/storelens)."),
                                          command: nil, to: output)
            }
            output.write(script)
            return .success
        }
        // SOURCE_DATE_EPOCH (reproducible builds) dates the pages; without it they carry none.
        let date = ProcessInfo.processInfo.environment["SOURCE_DATE_EPOCH"].flatMap(Int64.init).map { seconds -> String in
            let day = UTCDateTime.civilDate(daysSince1970: seconds / 86_400)
            return String(format: "%04lld-%02lld-%02lld", day.year, day.month, day.day)
        } ?? ""
        guard let name = rest.first else {
            output.write(ManPages.root(commands: configurations, version: version, date: date))
            return .success
        }
        guard rest.count == 1, let command = configurations.first(where: { $0.name == name }) else {
            return Diagnostics.report(.unknownCommand(name, suggestion: EditDistance.closest(to: name, in: configurations.map(\.name))),
                                      command: nil, to: output)
        }
        output.write(ManPages.command(command, version: version, date: date))
        return .success
    }

    static func run(_ arguments: [String]) -> ExitCode {
        let output = Output()
        guard let first = arguments.first else {
            output.write(Help.root(commands: commands.map { $0.configuration }))
            return .success
        }
        if first == "--help" || first == "-h" {
            output.write(Help.root(commands: commands.map { $0.configuration }))
            return .success
        }
        if first == "--version" {
            output.write("storelens \(version) (commit \(commit))\n")
            return .success
        }
        if first == "--generate-completion-script" || first == "--generate-manual" {
            return generated(first, Array(arguments.dropFirst()), to: output)
        }
        if first == "help" {
            guard let name = arguments.dropFirst().first else {
                output.write(Help.root(commands: commands.map { $0.configuration }))
                return .success
            }
            guard let command = commands.first(where: { $0.configuration.name == name }) else {
                return Diagnostics.report(.unknownCommand(name, suggestion: EditDistance.closest(to: name, in: commands.map { $0.configuration.name })),
                                          command: nil, to: output)
            }
            output.write(Help.command(command.configuration))
            return .success
        }
        guard let command = commands.first(where: { $0.configuration.name == first }) else {
            if first.hasPrefix("-") {
                return Diagnostics.report(.unknownOption(first, suggestion: EditDistance.closest(to: first, in: ["--help", "--version", "--generate-completion-script", "--generate-manual"])),
                                          command: nil, to: output)
            }
            return Diagnostics.report(.unknownCommand(first, suggestion: EditDistance.closest(to: first, in: commands.map { $0.configuration.name })),
                                      command: nil, to: output)
        }
        let configuration = command.configuration
        let instance: any Command
        let quiet: Bool
        let zone: DisplayZone
        let parsed: ParsedArguments
        do {
            parsed = try ParsedArguments.parse(Array(arguments.dropFirst()), options: configuration.options)
            if parsed.helpRequested {
                output.write(Help.command(configuration))
                return .success
            }
            instance = try command.init(parsed)
            quiet = parsed.flagIfOffered("--quiet")
            zone = try CommonOptions.displayZone(parsed)
        } catch {
            return Diagnostics.report(error, command: configuration, to: output)
        }
        do {
            // Before any work: no output may land on or in the evidence.
            try OutputPaths.check(parsed)
            // Library code reports long work to ProgressReporter.current; this draws it on a terminal.
            return try DisplayZone.$current.withValue(zone) {
                try TerminalProgress.reporter(quiet: quiet).bind { try instance.run(output) }
            }
        } catch {
            ScratchRegistry.shared.removeAll()
            return Diagnostics.report(error, to: output)
        }
    }
}

/// Which options name files storelens writes and which name files it reads, for the one output
/// check every command passes before it starts (`OutputGuard`). A new output option is listed
/// here, or it is not checked.
enum OutputPaths {
    static let files = ["--out", "--jsonl", "--log", "--evidence"]
    static let folders = ["--backup", "--out-dir"]
    /// Files read besides the positional inputs; an output may not be one of them either.
    static let readOptions = ["--manifest", "--model", "--to", "--migration-to", "--password-file"]

    static func check(_ parsed: ParsedArguments) throws {
        let outputs = files.flatMap { option in parsed.valuesIfOffered(option).map { OutputGuard.Output(option: option, path: $0) } }
            + folders.flatMap { option in parsed.valuesIfOffered(option).map { OutputGuard.Output(option: option, path: $0, kind: .folder) } }
        guard !outputs.isEmpty else { return }
        // With --each a folder is a folder of inputs, not one input: its entries are the evidence,
        // less the results file, which the batch never reads as an input (Storelens.batch). A folder
        // that cannot be listed stays one input, the stricter reading.
        var positionals = parsed.positionals
        if parsed.flagIfOffered("--each"), let entries = try? Storelens.batchInputs(parsed.positionals, each: true) {
            let results = parsed.valueIfOffered("--jsonl").map { URL(fileURLWithPath: $0).standardizedFileURL.path }
            positionals = entries.filter { URL(fileURLWithPath: $0).standardizedFileURL.path != results }
            // A folder of outputs made among those entries would be an input of the next run.
            try OutputGuard.checkOutside(outputs, folders: parsed.positionals)
        }
        try OutputGuard.check(outputs, inputs: positionals + readOptions.flatMap { parsed.valuesIfOffered($0) })
    }
}
