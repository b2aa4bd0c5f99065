import StoreFormats

/// JSON Lines: one compact JSON value a line (what `sqlite-utils insert --nl`, `jq` and
/// `pandas.read_json(lines=True)` load as one row per record).
public enum JSONLines {
    public static func line(_ value: JSONValue) -> String {
        value.rendered(pretty: false) + "\n"
    }

    /// One flat object: `keys[i]` holds `values[i]`.
    public static func line(keys: [String], values: [JSONValue]) -> String {
        line(.object(zip(keys, values).map { ($0, $1) }))
    }
}
