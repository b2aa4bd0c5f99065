import Foundation
import StoreTestSupport
import Testing

/// `storelens --generate-completion-script SHELL` and `--generate-manual [SUBCOMMAND]`, run in
/// the shells and through groff themselves: every subcommand, every option, and the values of
/// `--format` (and every option with fixed values) are offered; the man pages format without a
/// warning and name every option. The subcommands and options are read from `storelens --help`
/// and each `storelens help COMMAND`, so the test follows the tool, not a list of its own.
@Suite("shell completions and man pages")
struct CompletionAndManTests {
    struct Option: Hashable { let names: [String]; let values: [String] }

    /// The subcommands `storelens --help` lists.
    static func subcommands() throws -> [String] {
        let help = try CLI.run(["--help"]).stdout
        let section = (help.components(separatedBy: "SUBCOMMANDS:\n").last ?? "").components(separatedBy: "\n\n").first ?? ""
        return section.split(separator: "\n").compactMap { line in
            guard line.hasPrefix("  "), !line.hasPrefix("   "), let word = line.split(separator: " ").first, !word.contains("'") else { return nil }
            return String(word)
        }
    }

    /// The options `storelens help COMMAND` lists, with their allowed values (a row's text may
    /// wrap onto lines of its own, indented).
    static func options(of command: String) throws -> [Option] {
        let help = try CLI.run(["help", command]).stdout
        let section = (help.components(separatedBy: "OPTIONS:\n").last ?? "").components(separatedBy: "\nEXAMPLES:").first ?? ""
        var rows: [String] = []
        for line in section.split(separator: "\n") {
            if line.hasPrefix("  -") { rows.append(String(line)) } else if !rows.isEmpty { rows[rows.count - 1] += " " + line.trimmingCharacters(in: .whitespaces) }
        }
        return rows.compactMap { row in
            let label = row.dropFirst(2).components(separatedBy: "  ").first ?? ""
            let names = label.split(separator: " ").map { $0.trimmingCharacters(in: CharacterSet(charactersIn: ",")) }.filter { $0.hasPrefix("-") }
            var values: [String] = []
            if let range = row.range(of: "(values: ") {
                values = row[range.upperBound...].prefix { $0 != ";" && $0 != ")" }.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            }
            return names.isEmpty || names == ["-h", "--help"] ? nil : Option(names: names, values: values)
        }
    }

    /// The script for `shell`, written into `folder` (the caller's, removed with it).
    static func script(_ shell: String, in folder: TemporaryFolder) throws -> URL {
        let run = try CLI.run(["--generate-completion-script", shell])
        #expect(run.status == 0, "\(run.stderr)")
        let file = folder.path("storelens.\(shell)")
        try Data(run.stdout.utf8).write(to: file)
        return file
    }

    static func shell(_ program: String, _ script: String) -> PythonVenv.Result {
        PythonVenv.run([program, "-c", script])
    }

    static func has(_ program: String) -> Bool {
        PythonVenv.run(["sh", "-c", "command -v \(program)"]).status == 0
    }

    @Test("bash: subcommands, every command's options after -, the allowed values after a value option")
    func bash() throws {
        let folder = try TemporaryFolder("completion-bash")
        defer { withExtendedLifetime(folder) {} }
        let file = try Self.script("bash", in: folder)
        let commands = try Self.subcommands()
        #expect(commands.count > 10, "\(commands)")
        func complete(_ words: [String]) -> [String] {
            let array = words.map { "'\($0)'" }.joined(separator: " ")
            let run = Self.shell("bash", "source '\(file.path)'; COMP_WORDS=(\(array)); COMP_CWORD=\(words.count - 1); _storelens; printf '%s\\n' \"${COMPREPLY[@]}\"")
            return run.stdout.split(separator: "\n").map(String.init)
        }
        #expect(Set(complete(["storelens", ""])).isSuperset(of: commands))
        for command in commands {
            let options = try Self.options(of: command)
            let offered = Set(complete(["storelens", command, "-"]))
            for option in options { #expect(offered.isSuperset(of: option.names), "\(command): \(option.names) not offered") }
            for option in options where !option.values.isEmpty {
                #expect(complete(["storelens", command, "x", option.names[0], ""]).sorted() == option.values.sorted(), "\(command) \(option.names[0])")
            }
        }
    }

    @Test("zsh: the script parses, and each subcommand's _arguments names every option and --format's values",
          .enabled(if: Self.has("zsh"), "zsh is not installed (make deps installs it)"))
    func zsh() throws {
        let folder = try TemporaryFolder("completion-zsh")
        defer { withExtendedLifetime(folder) {} }
        let file = try Self.script("zsh", in: folder)
        #expect(Self.shell("zsh", "source '\(file.path)' 2>/dev/null; true").status == 0)
        #expect(PythonVenv.run(["zsh", "-n", file.path]).status == 0, "zsh -n")
        for command in try Self.subcommands() {
            // _arguments and _describe stand in for zsh's completion system: they print what they get.
            let run = Self.shell("zsh", """
            _arguments() { print -l -- "$@" }
            _describe() { print -l -- "$@" }
            _files() { }
            source '\(file.path)' 2>/dev/null
            words=(storelens \(command) ''); CURRENT=3
            _storelens
            """)
            for option in try Self.options(of: command) {
                for name in option.names { #expect(run.stdout.contains(name), "\(command): \(name) missing from zsh's spec") }
                if !option.values.isEmpty {
                    #expect(run.stdout.contains("(\(option.values.joined(separator: " ")))"), "\(command) \(option.names[0]) values")
                }
            }
        }
    }

    @Test("fish: complete -C offers subcommands, every long option and the allowed values",
          .enabled(if: Self.has("fish"), "fish is not installed (make deps installs it)"))
    func fish() throws {
        let folder = try TemporaryFolder("completion-fish")
        defer { withExtendedLifetime(folder) {} }
        let file = try Self.script("fish", in: folder)
        func complete(_ line: String) -> [String] {
            Self.shell("fish", "source '\(file.path)'; complete -C '\(line)'").stdout.split(separator: "\n")
                .map { String($0.split(separator: "\t").first ?? "") }
        }
        let commands = try Self.subcommands()
        #expect(Set(complete("storelens ")).isSuperset(of: commands))
        for command in commands {
            let options = try Self.options(of: command)
            let offered = Set(complete("storelens \(command) --"))
            for option in options { for name in option.names where name.hasPrefix("--") { #expect(offered.contains(name), "\(command): \(name)") } }
            for option in options where !option.values.isEmpty {
                #expect(Set(complete("storelens \(command) \(option.names.last!) ")) == Set(option.values), "\(command) \(option.names.last!)")
            }
        }
    }

    @Test("an unknown shell is exit 2, one sentence naming the three")
    func unknownShell() throws {
        let run = try CLI.run(["--generate-completion-script", "tcsh"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("bash, zsh, fish"), "\(run.stderr)")
    }

    @Test("man pages: storelens(1) and one per subcommand format without a groff warning and name every option",
          .enabled(if: Self.has("groff"), "groff is not installed (make deps installs it)"))
    func manPages() throws {
        let folder = try TemporaryFolder("man")
        let commands = try Self.subcommands()
        for page in [nil] + commands.map(Optional.some) {
            let run = try CLI.run(["--generate-manual"] + (page.map { [$0] } ?? []), environment: ["SOURCE_DATE_EPOCH": "1764892800"])
            #expect(run.status == 0, "\(run.stderr)")
            let file = folder.path("storelens\(page.map { "-" + $0 } ?? "").1")
            try Data(run.stdout.utf8).write(to: file)
            let check = PythonVenv.run(["groff", "-man", "-ww", "-z", file.path])
            #expect(check.status == 0 && check.stderr.isEmpty, "\(file.lastPathComponent): \(check.stderr)")
            #expect(run.stdout.contains("\"2025-12-05\""), "dated by SOURCE_DATE_EPOCH")
            let text = PythonVenv.run(["groff", "-man", "-Tascii", "-P-cbou", file.path]).stdout
            if let page {
                for option in try Self.options(of: page) { for name in option.names { #expect(text.contains(name), "storelens-\(page)(1) lacks \(name)") } }
            } else {
                for command in commands { #expect(text.contains("storelens-\(command)(1)"), "storelens(1) lacks \(command)") }
            }
        }
    }
}
