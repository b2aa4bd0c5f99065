/// Help text in swift-argument-parser's layout: OVERVIEW, USAGE, ARGUMENTS, OPTIONS, EXAMPLES.
enum Help {
    static let labelWidth = 26

    static func root(commands: [CommandConfiguration]) -> String {
        var out = "OVERVIEW: Inspect, audit and repair the Core Data and SwiftData stores of iOS and macOS apps.\n\n"
        out += "Every command reads evidence without changing it: stores are read where they lie through a\n"
        out += "read-only SQLite VFS (copied into a private working folder where they must be, or with\n"
        out += "--copy), and the originals are hashed before and after.\n\n"
        out += "USAGE: storelens <subcommand> [<options>]\n\n"
        out += "OPTIONS:\n"
        out += row("--version", "Show the version and the commit it was built from.")
        out += row("--generate-completion-script <shell>", "Print the completion script for bash, zsh or fish (docs/install.md).")
        out += row("--generate-manual [<subcommand>]", "Print the man page storelens(1), or storelens-<subcommand>(1), as roff.")
        out += row("-h, --help", "Show help information.")
        out += "\nSUBCOMMANDS:\n"
        for c in commands { out += row(c.name, c.abstract) }
        out += "\n  See 'storelens help <subcommand>' for detailed help.\n"
        return out
    }

    static func command(_ c: CommandConfiguration) -> String {
        var out = "OVERVIEW: \(c.abstract)\n\n"
        if !c.discussion.isEmpty { out += c.discussion + "\n\n" }
        out += "USAGE: \(usage(c))\n\n"
        if !c.arguments.isEmpty {
            out += "ARGUMENTS:\n"
            for a in c.arguments { out += row("<\(a.name)>", a.help) }
            out += "\n"
        }
        out += "OPTIONS:\n"
        for o in c.options { out += row(label(o), text(o)) }
        out += row("-h, --help", "Show help information.")
        if !c.examples.isEmpty {
            out += "\nEXAMPLES:\n"
            for e in c.examples { out += "  \(e)\n" }
        }
        return out
    }

    /// `-f, --format <format>`: an option's names, shortest first, and its value's name.
    static func label(_ o: OptionSpec) -> String {
        var label = o.names.sorted { $0.count < $1.count }.joined(separator: ", ")
        if o.kind == .value { label += " <\(o.valueName)>" }
        return label
    }

    /// An option's help with its allowed values and default, as help, man pages and completions show it.
    static func text(_ o: OptionSpec) -> String {
        var text = o.help
        if !o.allowed.isEmpty || o.defaultValue != nil {
            var parts: [String] = []
            if !o.allowed.isEmpty { parts.append("values: " + o.allowed.joined(separator: ", ")) }
            if let d = o.defaultValue { parts.append("default: \(d)") }
            text += " (\(parts.joined(separator: "; ")))"
        }
        return text
    }

    static func usage(_ c: CommandConfiguration) -> String {
        var parts = ["storelens", c.name]
        for o in c.options {
            let label = o.kind == .value ? "\(o.primaryName) <\(o.valueName)>" : o.primaryName
            parts.append("[\(label)]" + (o.repeatable ? " ..." : ""))
        }
        for a in c.arguments {
            var label = "<\(a.name)>"
            if a.repeating { label += " ..." }
            parts.append(a.optional ? "[\(label)]" : label)
        }
        return parts.joined(separator: " ")
    }

    /// One label/description row, wrapped at 100 columns.
    static func row(_ label: String, _ text: String) -> String {
        let indent = String(repeating: " ", count: labelWidth + 2)
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty && line.count + word.count + 1 > 100 - labelWidth - 2 {
                lines.append(line); line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(line) }
        let head = "  " + label
        var out = ""
        if head.count >= labelWidth + 2 {
            out += head + "\n" + lines.map { indent + $0 }.joined(separator: "\n") + "\n"
        } else {
            out += head + String(repeating: " ", count: labelWidth + 2 - head.count) + (lines.first ?? "") + "\n"
            out += lines.dropFirst().map { indent + $0 + "\n" }.joined()
        }
        return out
    }
}
