import StoreFormats

/// Markdown escaping for text from a device: it must not become links, HTML or table breaks.
public enum Markdown {
    public static func escape(_ s: String) -> String {
        var out = ""
        for c in TextTable.sanitized(s) {
            switch c {
            case "|", "\\", "`", "*", "_", "[", "]", "<", ">", "#", "!": out += "\\\(c)"
            case "\n": out += " "
            default: out.append(c)
            }
        }
        return out
    }
    /// Text inside a code span: backticks cannot be escaped there, so they are replaced.
    public static func code(_ s: String) -> String {
        TextTable.sanitized(s).replacingOccurrences(of: "`", with: "'").replacingOccurrences(of: "\n", with: " ")
    }

    /// A code span inside a table cell: as `code`, and a `|` would end the cell even inside a
    /// code span, so it is escaped (GitHub renders `\|` there as `|`).
    public static func codeCell(_ s: String) -> String {
        code(s).replacingOccurrences(of: "|", with: "\\|")
    }
}

/// For a ticket or a pull request: the view's Markdown.
public enum MarkdownFormat: DocumentFormat, FindingsFormat {
    public static let name = "markdown"

    public static func render<View: DocumentView>(_ subject: View.Subject, by view: View.Type) -> String {
        view.markdown(subject)
    }
}
