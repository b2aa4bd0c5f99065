/// SQL identifier quoting for names that come from a device.
///
/// Table, column and index names in a pulled store are untrusted: Z_PRIMARYKEY may name an
/// entity `Robert"); DROP TABLE x; --`. Every identifier that reaches SQL text goes through
/// `quoted`, which wraps it in double quotes and doubles embedded quotes, so the name can
/// only ever be a name.
public enum Identifier {
    /// `name` as a quoted SQL identifier: `Z"ITEM` becomes `"Z""ITEM"`.
    public static func quoted(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
