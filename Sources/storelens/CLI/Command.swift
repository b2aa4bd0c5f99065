import Foundation

/// What every subcommand declares about itself, for parsing and for help.
struct CommandConfiguration {
    let name: String
    let abstract: String
    let discussion: String
    let arguments: [ArgumentSpec]
    let options: [OptionSpec]
    let examples: [String]
}

/// A subcommand: parses its own arguments, validates them, then runs.
protocol Command: Sendable {
    static var configuration: CommandConfiguration { get }
    init(_ parsed: ParsedArguments) throws(ParseError)
    func run(_ output: Output) throws -> ExitCode
}

/// Where a command writes. stdout is for results, stderr for diagnostics.
final class Output {
    func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
    func error(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}

/// Options every read command shares.
enum CommonOptions {
    static let format = OptionSpec.value("--format", "-f", valueName: "format", help: "Output format.",
                                         allowed: ["text", "json"], default: "text")
    static let keepScratch = OptionSpec.flag("--keep-scratch",
                                             help: "Keep the private working folder with the copies storelens read, and print where it is.")
    static let rollBackJournal = OptionSpec.flag("--roll-back-journal",
                                                 help: "Read a store with a hot -journal by rolling it back in the working copy (the original is never changed).")
}
