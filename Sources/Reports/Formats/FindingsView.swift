import Findings
import Operations
import StoreFormats

/// A result made of findings: besides a document's views, each finding and where it is, which
/// `--format sarif` shows as a SARIF log.
public protocol FindingsView: DocumentView {
    static func located(_ subject: Subject) -> [SARIF.Located]
}

/// Which command made the findings, for the formats that record it (SARIF's tool and invocation).
public struct FindingsRun: Sendable {
    public var command: String
    public var toolVersion: String
    /// Where the findings' files are on disk (SARIF's artifacts): the command's, made with its
    /// inputs as given (Reports reads no disk).
    public var places: SARIFPlaces

    public init(command: String, toolVersion: String, places: SARIFPlaces) {
        self.command = command
        self.toolVersion = toolVersion
        self.places = places
    }
}

/// One way to show a result made of findings: every document format, and the ones that need the
/// findings' places (SARIF). Listed once in `FindingsFormats.all`.
public protocol FindingsFormat {
    static var name: String { get }
    static func render<View: FindingsView>(_ subject: View.Subject, by view: View.Type, run: FindingsRun) -> String
}

extension FindingsFormat where Self: DocumentFormat {
    public static func render<View: FindingsView>(_ subject: View.Subject, by view: View.Type, run: FindingsRun) -> String {
        render(subject, by: view)
    }
}

/// The formats of the commands whose answer is findings (check, lint, migration, audit).
public enum FindingsFormats {
    public static let all: [any FindingsFormat.Type] = [TextFormat.self, JSONFormat.self, MarkdownFormat.self, SARIFFormat.self]
    public static var names: [String] { all.map { $0.name } }

    public static func named(_ name: String) -> (any FindingsFormat.Type)? {
        all.first { $0.name == name }
    }
}

extension FindingsView {
    /// `subject` in the format named `format`, SARIF included: the log of `storelens command`.
    public static func rendered(_ subject: Subject, as format: String, command: String, toolVersion: String, places: SARIFPlaces) -> String {
        (FindingsFormats.named(format) ?? TextFormat.self).render(subject, by: Self.self, run: FindingsRun(command: command, toolVersion: toolVersion, places: places))
    }
}

/// For code review and CI: SARIF 2.1.0 (docs/sarif.md).
public enum SARIFFormat: FindingsFormat {
    public static let name = "sarif"

    public static func render<View: FindingsView>(_ subject: View.Subject, by view: View.Type, run: FindingsRun) -> String {
        SARIF.log(view.located(subject), command: run.command, toolVersion: run.toolVersion, places: run.places).rendered() + "\n"
    }
}
