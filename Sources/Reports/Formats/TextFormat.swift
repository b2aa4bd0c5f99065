/// For people at a terminal: the view's own text (its cells sanitised by `TextTable`).
public enum TextFormat: DocumentFormat, FindingsFormat {
    public static let name = "text"

    public static func render<View: DocumentView>(_ subject: View.Subject, by view: View.Type) -> String {
        view.text(subject)
    }
}
