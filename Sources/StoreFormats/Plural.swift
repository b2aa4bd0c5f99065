/// "1 row", "0 rows", "2 rows": a count and its noun, with an "s" unless the count is one.
/// Every message that counts something says it this way; `formatted` writes the number (HTML
/// groups thousands, plain text does not). Nouns whose plural is not "+s" spell both forms inline.
public func plural(_ count: Int, _ noun: String, formatted: (Int) -> String = { String($0) }) -> String {
    "\(formatted(count)) \(noun)\(count == 1 ? "" : "s")"
}
