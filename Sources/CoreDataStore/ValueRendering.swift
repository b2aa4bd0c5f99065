import Foundation
import StoreFormats

/// How decoded values print: JSON for machines, one short cell for tables and CSV.
public enum ValueRendering {
    /// A transaction's time for people: in the `--tz` zone (`DisplayZone.current`).
    public static func time(_ iso: String?, referenceSeconds: Double?) -> String? {
        guard let iso else { return nil }
        guard !DisplayZone.current.isUTC, let referenceSeconds else { return iso }
        return DisplayZone.current.iso8601(referenceSeconds: referenceSeconds)
    }

    /// One line of text for a table cell or a CSV field (NULL prints as `nullText`); dates in
    /// the `--tz` zone.
    public static func cell(_ value: FieldValue, nullText: String = "") -> String {
        switch value {
        case .null: return nullText
        case .integer(let i): return String(i)
        case .real(let d): return String(d)
        case .bool(let b): return b ? "true" : "false"
        case .text(let s): return s
        case .longText(let t): return t.prefix + "…"
        case .date(let iso, let seconds): return DisplayZone.current.isUTC ? iso : DisplayZone.current.iso8601(referenceSeconds: seconds)
        case .uuid(let s): return s
        case .decimal(let s): return s
        case .binary(let b):
            switch b.storage {
            case .external(let file):
                switch file.kind {
                case .file: return "<external \(file.size ?? 0) bytes sha256 \(file.sha256 ?? "?"): \(file.relativePath)>"
                case .missing: return "<external file MISSING: \(file.relativePath)>"
                case .notChecked: return "<external file: \(file.relativePath)>"
                default: return "<external data is a \(file.kind.name), not followed or read: \(file.relativePath)>"
                }
            case .inline:
                return "<\(b.size ?? 0) bytes inline \(b.prefixHex)\((b.size ?? 0) > BinaryValue.prefixLength ? "…" : "")>"
            case .plain:
                return "<\(b.size ?? 0) bytes \(b.prefixHex)\((b.size ?? 0) > BinaryValue.prefixLength ? "…" : "")>"
            }
        case .archived, .composite:
            return ValueJSON.json(value).rendered(pretty: false)
        case .object(let entity, let pk): return "\(entity)#\(pk)"
        }
    }

    /// A value inside a line of text (`name "Stone"`, `kept uuid=…`): text quoted and cut at 80
    /// characters, NULL spelled out, anything else as its cell cut at 120. Not sanitised: the
    /// caller sanitises the whole line.
    public static func inline(_ value: FieldValue) -> String {
        if case .text(let s) = value { return "\"" + String(s.prefix(80)) + (s.count > 80 ? "…" : "") + "\"" }
        if case .longText(let t) = value { return "\"" + String(t.prefix.prefix(80)) + "…\"" }
        let text = cell(value, nullText: "NULL")
        return text.count > 120 ? String(text.prefix(119)) + "…" : text
    }
}
