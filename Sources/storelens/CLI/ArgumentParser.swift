import StoreFormats

/// One option a command accepts, as it appears in help and in parsing.
struct OptionSpec {
    enum Kind { case flag, value }
    let names: [String]          // e.g. ["--format", "-f"]
    let kind: Kind
    let valueName: String
    let help: String
    /// The allowed values, shown as "(values: …; default: …)" and checked while parsing.
    let allowed: [String]
    let defaultValue: String?
    let repeatable: Bool

    static func flag(_ names: String..., help: String) -> OptionSpec {
        OptionSpec(names: names, kind: .flag, valueName: "", help: help, allowed: [], defaultValue: nil, repeatable: false)
    }
    static func value(_ names: String..., valueName: String, help: String, allowed: [String] = [],
                      default defaultValue: String? = nil, repeatable: Bool = false) -> OptionSpec {
        OptionSpec(names: names, kind: .value, valueName: valueName, help: help, allowed: allowed,
                   defaultValue: defaultValue, repeatable: repeatable)
    }
    var primaryName: String { names[0] }
}

/// A positional argument in help.
struct ArgumentSpec {
    let name: String
    let help: String
    let repeating: Bool
    let optional: Bool
}

/// What went wrong on the command line. Data only; `Diagnostics` turns it into text.
enum ParseError: Error, Equatable {
    case unknownCommand(String, suggestion: String?)
    case unknownOption(String, suggestion: String?)
    case missingValue(option: String)
    case invalidValue(option: String, value: String, allowed: [String])
    case missingArgument(String)
    case unexpectedArgument(String)
    case duplicateOption(String)
    case invalid(String)
}

/// The result of parsing one command's arguments against its option specs.
struct ParsedArguments {
    var positionals: [String] = []
    private(set) var values: [String: [String]] = [:]
    private(set) var flags: Set<String> = []
    var helpRequested = false
    /// The command's options by primary name (set by `parse`): a lookup of a name the command
    /// does not declare, or of a flag as a value, is a typo that would read as "not given".
    private var declared: [String: OptionSpec.Kind]?

    func flag(_ name: String) -> Bool {
        assertDeclared(name, .flag)
        return flags.contains(name)
    }

    func value(_ name: String) -> String? {
        assertDeclared(name, .value)
        return values[name]?.last
    }

    func values(_ name: String) -> [String] {
        assertDeclared(name, .value)
        return values[name] ?? []
    }

    /// For code every command shares (the output check, `--tz`, the input settings): the option
    /// when this command offers it, else as if it were not given.
    func flagIfOffered(_ name: String) -> Bool { flags.contains(name) }
    func valueIfOffered(_ name: String) -> String? { values[name]?.last }
    func valuesIfOffered(_ name: String) -> [String] { values[name] ?? [] }

    private func assertDeclared(_ name: String, _ kind: OptionSpec.Kind) {
        assert(declared.map { $0[name] == kind } ?? true, "\(name) is not a \(kind) option this command declares (by its first name)")
    }
    /// `--format` as given, else its default from the command's option list (applied while parsing).
    var format: String { value("--format") ?? "" }

    /// The one input of a command that reads one store (`schema`, `rows`, `history` …).
    func onlyInput() throws(ParseError) -> String {
        guard let first = positionals.first else { throw .missingArgument("input") }
        guard positionals.count == 1 else { throw .unexpectedArgument(positionals[1]) }
        return first
    }

    /// The inputs of a command that reads one or more (`inspect`, `check`, `scan` …).
    func inputs() throws(ParseError) -> [String] {
        guard !positionals.isEmpty else { throw .missingArgument("input") }
        return positionals
    }

    /// A commit number (`--as-of`, `--from`, `--to`): 0 is the main file alone.
    func commit(_ name: String) throws(ParseError) -> Int? {
        guard let text = value(name) else { return nil }
        guard let n = Int(text), n >= 0 else { throw .invalid("The value '\(text)' is invalid for '\(name)'; give a commit number (0 for the main file alone).") }
        return n
    }

    /// A list option's items (`--only a,b`; every value of a repeatable one), each trimmed; nil when not given.
    func list(_ name: String) -> [String]? {
        let given = values(name)
        guard !given.isEmpty else { return nil }
        return given.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
    }

    /// A plain loop over the tokens: `--name value`, `--name=value`, flags, `--` ends options.
    static func parse(_ arguments: [String], options: [OptionSpec]) throws(ParseError) -> ParsedArguments {
        var result = ParsedArguments()
        result.declared = Dictionary(options.map { ($0.primaryName, $0.kind) }, uniquingKeysWith: { first, _ in first })
        var tokens = arguments.makeIterator()
        var optionsEnded = false
        func spec(for name: String) -> OptionSpec? { options.first { $0.names.contains(name) } }
        while let token = tokens.next() {
            if optionsEnded || !token.hasPrefix("-") || token == "-" {
                // An empty word (an unset shell variable) would otherwise read the current folder.
                if token.isEmpty { throw .invalid("An empty argument was given where a path or name belongs (an unset shell variable?); give the store, container, archive or backup to read.") }
                result.positionals.append(token)
                continue
            }
            if token == "--" { optionsEnded = true; continue }
            if token == "-h" || token == "--help" { result.helpRequested = true; continue }
            var name = token
            var inlineValue: String?
            if let eq = token.firstIndex(of: "="), token.hasPrefix("--") {
                name = String(token[..<eq])
                inlineValue = String(token[token.index(after: eq)...])
            }
            if name == "--password" || name == "-p", spec(for: name) == nil, spec(for: "--password-file") != nil {
                // Said without the value, which must not be echoed anywhere.
                throw .invalid("storelens never takes a password as a command-line value (it would stay in shell history and show in ps); give it with --password-file FILE or the STORELENS_BACKUP_PASSWORD variable, or type it when asked in a terminal.")
            }
            guard let option = spec(for: name) else {
                let candidates = options.flatMap(\.names).filter { $0.hasPrefix("--") } + ["--help"]
                throw .unknownOption(name, suggestion: EditDistance.closest(to: name, in: candidates))
            }
            switch option.kind {
            case .flag:
                if inlineValue != nil { throw .invalid("\(name) is a flag and takes no value") }
                result.flags.insert(option.primaryName)
            case .value:
                guard let value = inlineValue ?? tokens.next() else { throw .missingValue(option: option.primaryName) }
                if !option.allowed.isEmpty && !option.allowed.contains(value) {
                    throw .invalidValue(option: option.primaryName, value: value, allowed: option.allowed)
                }
                if !option.repeatable && result.values[option.primaryName] != nil {
                    throw .duplicateOption(option.primaryName)
                }
                result.values[option.primaryName, default: []].append(value)
            }
        }
        for option in options where option.kind == .value && result.values[option.primaryName] == nil {
            if let d = option.defaultValue { result.values[option.primaryName] = [d] }
        }
        return result
    }
}
