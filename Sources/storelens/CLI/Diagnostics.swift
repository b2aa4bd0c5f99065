import Acquisition
import Coexistence
import CoreDataStore
import Foundation
import ModelReview
import Operations
import OutputFiles
import Repair
import Reports
import WALForensics

/// The one place where errors become text and exit codes.
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
        guard let (message, isInternal) = describe(error) else {
            output.error("Error: internal error: \(error); please report this with the command you ran.\n")
            return .internalError
        }
        output.error("Error: \(message)\n")
        return isInternal ? .internalError : .usageOrInput
    }

    /// The sentence for each error type the library throws, and whether it is storelens's own fault.
    static func describe(_ error: Error) -> (String, Bool)? {
        // Our own I/O failure, whatever layer it surfaced in, is never described as the evidence's.
        if let ours = WorkingFolderFailure.from(error) { return (ours.description, true) }
        switch error {
        case let e as AcquisitionError: return (e.description, e.isInternal)
        case let e as RepairError:
            if case .verificationFailed = e { return (e.description, true) }
            return (e.description, false)
        case let e as WALForensicsError: return (e.description, !e.isInputError)
        case let e as InputError: return (e.message, false)
        case let e as DecodedExportError: return (e.description, true)
        case let e as OutputFileFailure: return (e.description, e.isOurs)
        case let e as OutputPathError: return (e.description, false)
        case let e as OutputFileRefusal: return (e.description, false)
        case let e as ArchiveError: return (e.description, false)
        case let e as BackupError: return (e.description, false)
        case let e as BackupPasswordError: return (e.description, false)
        case let e as BackupCryptoError: return (e.description, true)
        case let e as ManifestError: return (e.description, false)
        case let e as CoreDataStoreError: return (e.description, false)
        case let e as AtomicStoreError: return (e.description, false)
        case let e as ModelError: return (e.description, false)
        case let e as MigrationError: return (e.description, false)
        default: return nil
        }
    }
}

