/// Man pages (`storelens --generate-manual [SUBCOMMAND]`): storelens(1) and storelens-COMMAND(1)
/// in roff's man macros, made from the same configurations as help, so the three never disagree.
enum ManPages {
    /// roff text: a backslash as `\e`, a `-` as `\-` (a real minus, so `--format` can be searched
    /// and copied), a line starting with `.` or `'` guarded by `\&`, non-ASCII as `\[uXXXX]`.
    static func escaped(_ text: String) -> String {
        var out = ""
        // Anything past ASCII as roff's `\[uXXXX]`, which every groff and mandoc reads.
        for scalar in installedDocs(text).replacingOccurrences(of: "\\", with: "\\e").replacingOccurrences(of: "-", with: "\\-").unicodeScalars {
            if scalar.isASCII { out.unicodeScalars.append(scalar) } else { out += String(format: "\\[u%04X]", scalar.value) }
        }
        out = out.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix(".") || line.hasPrefix("'") ? "\\&" + line : String(line)
        }.joined(separator: "\n")
        return out
    }

    /// Where the documentation is on the machine that has the man page: the Debian package installs
    /// `docs/` as /usr/share/doc/storelens (the release archive ships it as docs/), so a page cites
    /// a file the reader has, not the repository's path.
    static let docsFolder = "/usr/share/doc/storelens/"

    static func installedDocs(_ text: String) -> String {
        guard text.contains("docs/") else { return text }
        return text.replacingOccurrences(of: #"(?<![A-Za-z0-9_./-])docs/([a-z0-9-]+\.md)"#, with: docsFolder + "$1", options: .regularExpression)
    }

    /// Every command's exit statuses, 130 and 141 included (docs/exit-codes.md).
    static let exitStatus = ".SH EXIT STATUS\n.TP\n0\nSuccess.\n.TP\n1\nFindings at or above \\-\\-fail\\-on (check, audit, lint, migration, report, and a batch's worst input).\n"
        + ".TP\n2\nBad input or usage: the error says what and where.\n.TP\n3\nAn input changed while storelens read it, or storelens' own failure (the working folder).\n"
        + ".TP\n130\nInterrupted (Ctrl\\-C); the working folder is removed.\n.TP\n141\nThe reader of standard output went away (a closed pipe); the working folder is removed.\n"

    static func header(_ name: String, version: String, date: String) -> String {
        // No hyphenation and a ragged right margin: option names and page names stay whole.
        ".TH \(escaped(name.uppercased())) 1 \"\(date)\" \"storelens \(escaped(version))\" \"storelens manual\"\n.nh\n.ad l\n"
    }

    static func root(commands: [CommandConfiguration], version: String, date: String) -> String {
        var out = header("storelens", version: version, date: date)
        out += ".SH NAME\nstorelens \\- inspect, audit and repair the Core Data and SwiftData stores of iOS and macOS apps\n"
        out += ".SH SYNOPSIS\n.B storelens\n.I subcommand\n[\\fIoptions\\fR]\n"
        out += ".SH DESCRIPTION\n" + escaped("""
        Every command reads evidence without changing it: stores are read where they lie through a \
        read-only SQLite VFS (copied into a private working folder where they must be, or with --copy), \
        and the originals are hashed before and after.
        """) + "\n"
        out += ".SH SUBCOMMANDS\n"
        for c in commands { out += ".TP\n.B \(escaped(c.name))\n\(escaped(c.abstract)) See \\fBstorelens\\-\(escaped(c.name))\\fR(1).\n" }
        out += ".SH OPTIONS\n.TP\n.B \\-\\-version\nShow the version and the commit it was built from.\n"
        out += ".TP\n.BI \\-\\-generate\\-completion\\-script \" shell\"\nPrint the completion script for bash, zsh or fish.\n"
        out += ".TP\n.BI \\-\\-generate\\-manual \" \\fR[\\fIsubcommand\\fR]\"\nPrint this page, or a subcommand's, as roff.\n"
        out += ".TP\n.BR \\-h \", \" \\-\\-help\nShow help information.\n"
        out += exitStatus
        out += ".SH SEE ALSO\n" + commands.map { "\\fBstorelens\\-\(escaped($0.name))\\fR(1)" }.joined(separator: ", ") + "\n"
        return out
    }

    static func command(_ c: CommandConfiguration, version: String, date: String) -> String {
        var out = header("storelens-\(c.name)", version: version, date: date)
        out += ".SH NAME\nstorelens\\-\(escaped(c.name)) \\- \(escaped(c.abstract))\n"
        out += ".SH SYNOPSIS\n\(escaped(Help.usage(c)))\n"
        if !c.discussion.isEmpty { out += ".SH DESCRIPTION\n\(escaped(c.discussion))\n" }
        if !c.arguments.isEmpty {
            out += ".SH ARGUMENTS\n"
            for a in c.arguments { out += ".TP\n.I \(escaped(a.name))\n\(escaped(a.help))\n" }
        }
        out += ".SH OPTIONS\n"
        for o in c.options { out += ".TP\n.B \(escaped(Help.label(o)))\n\(escaped(Help.text(o)))\n" }
        out += ".TP\n.BR \\-h \", \" \\-\\-help\nShow help information.\n"
        if !c.examples.isEmpty {
            out += ".SH EXAMPLES\n.nf\n" + c.examples.map(escaped).joined(separator: "\n") + "\n.fi\n"
        }
        out += exitStatus
        out += ".SH SEE ALSO\n\\fBstorelens\\fR(1), \(docsFolder)\(escaped(c.name)).md\n"
        return out
    }
}
