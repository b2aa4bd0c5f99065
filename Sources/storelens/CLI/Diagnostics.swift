import Foundation
import Operations

/// Where errors become text and exit codes: usage errors (`ParseError`) are worded here; every
/// other error says its own sentence and class (`DescribedError`) through `Storelens.describe`.
enum Diagnostics {
    static func message(for error: ParseError) -> String {
        switch error {
        case .unknownCommand(let name, let suggestion):
            return "Unknown subcommand '\(name)'." + (suggestion.map { " Did you mean '\($0)'?" } ?? "")
        case .unknownOption(let name, let suggestion):
            return "Unknown option '\(name)'." + (suggestion.map { " Did you mean '\($0)'?" } ?? "")
        case .missingValue(let option):
            return "Missing value for '\(option)'."
        case .invalidValue(let option, let value, let allowed):
            return "The value '\(value)' is invalid for '\(option)'; use one of: \(allowed.joined(separator: ", "))."
        case .missingArgument(let name):
            return "Missing expected argument '<\(name)>'."
        case .unexpectedArgument(let value):
            return "Unexpected argument '\(value)'."
        case .duplicateOption(let option):
            return "'\(option)' was given more than once."
        case .invalid(let text):
            return text
        }
    }

    /// Usage errors: the message, the usage line and where to find help (stderr, exit 2).
    static func report(_ error: ParseError, command: CommandConfiguration?, to output: Output) -> ExitCode {
        // One line each: `Output.error` keeps only the newline that ends a line.
        output.error("Error: \(message(for: error))\n")
        // The usage line helps where the command line's shape is wrong; a bad value's sentence
        // already says what to give (a 400-character usage line after it only hides that).
        let shapeIsWrong: Bool
        switch error {
        case .invalidValue, .invalid, .duplicateOption: shapeIsWrong = false
        default: shapeIsWrong = true
        }
        if let command, !shapeIsWrong {
            output.error("  See 'storelens \(command.name) --help' for more information.\n")
        } else if let command {
            output.error("Usage: \(Help.usage(command))\n")
            output.error("  See 'storelens \(command.name) --help' for more information.\n")
        } else {
            output.error("Usage: storelens <subcommand> [<options>]\n")
            output.error("  See 'storelens --help' for more information.\n")
        }
        return .usageOrInput
    }

    /// Runtime errors: one sentence on stderr, exit 2 for bad input, 3 for our own failures.
    static func report(_ error: Error, to output: Output) -> ExitCode {
        let (message, code) = outcome(error)
        output.error("Error: \(message)\n")
        return code
    }

    /// The sentence and exit code `report(_:to:)` gives an error, without printing them: what
    /// the error says of itself (`DescribedError`, through `Storelens.describe`).
    static func outcome(_ error: Error) -> (message: String, code: ExitCode) {
        let described = Storelens.describe(error)
        return (described.sentence, ExitCode(described.errorClass))
    }
}
