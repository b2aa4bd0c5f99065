import CoreDataStore
import Foundation
import StoreFormats

/// Writes the rows of a `RowScan` straight into bytes, for the formats written one row at a time
/// (jsonl, array, csv, tsv): the same bytes `RowsWriter.add(_: DecodedRow)` writes for the same
/// row, without building a `DecodedRow`, a `JSONValue` tree or Strings for the common values.
/// Keys, entity names and relationship prefixes are escaped once; a value the fast path does not
/// cover (non-ASCII text, composites, binaries …) is rendered by the reference code
/// (`ValueRendering`), so the two can only differ where RowsFastPathTests would see it.
struct RowBytesEncoder {
    let format: RowsWriter.Format
    let rawCSV: Bool
    /// `,"key":` for each field (JSON formats).
    private let keyBytes: [[UInt8]]
    /// Per `RowScan.names` index: `{"_entity":"Name","_pk":` (JSON) or the entity's CSV/TSV cell
    /// and separator; and the text of a relationship value up to its `#`.
    private var rowStart: [[UInt8]] = []
    private var objectPrefix: [[UInt8]] = []
    /// Cell text before CSV/TSV quoting, reused per value.
    private var cell: [UInt8] = []
    /// Writes out what is gathered, mid-row, while a long text is written in pieces.
    let spill: ([UInt8]) -> Void

    init(format: RowsWriter.Format, flatKeys: [String], rawCSV: Bool, spill: @escaping ([UInt8]) -> Void) {
        precondition(Self.handles(format), "RowBytesEncoder writes jsonl, array, csv and tsv")
        self.format = format
        self.rawCSV = rawCSV
        self.spill = spill
        keyBytes = flatKeys.map { key in
            var text = ","
            JSONValue.escape(key, into: &text)
            return Array((text + ":").utf8)
        }
        cell.reserveCapacity(256)
    }

    static func handles(_ format: RowsWriter.Format) -> Bool {
        format == .jsonl || format == .array || format == .csv || format == .tsv
    }

    private var isJSON: Bool { format == .jsonl || format == .array }

    /// The CSV or TSV rules (`Delimited`), for those two formats.
    private var delimited: Delimited { format == .csv ? .csv : .tsv }

    /// Appends one row, `number` counting from 1 (the array format separates rows by it).
    mutating func append(_ row: RowScan.Row, number: Int, fieldCount: Int, to out: inout [UInt8]) throws {
        names(upTo: row.entity, row)
        if isJSON {
            if format == .array { out.append(contentsOf: number == 1 ? Self.newline : Self.commaNewline) }
            out.append(contentsOf: rowStart[row.entity])
            Self.appendDecimal(row.pk, to: &out)
            for i in 0 ..< fieldCount {
                out.append(contentsOf: keyBytes[i])
                guard row.applies(i) else { out.append(contentsOf: Self.null); continue }
                let value = row.value(i)
                if case .decoded(.longText(let text)) = value {
                    try LongTextOutput.json(text, into: &out, spill: spill)
                } else {
                    appendJSON(value, row, to: &out)
                }
            }
            out.append(contentsOf: format == .jsonl ? Self.braceNewline : Self.brace)
        } else {
            let delimited = delimited
            out.append(contentsOf: rowStart[row.entity])
            cell.removeAll(keepingCapacity: true)
            Self.appendDecimal(row.pk, to: &cell)
            delimited.appendCell(cell, raw: rawCSV, to: &out)
            for i in 0 ..< fieldCount {
                out.append(delimited.separator)
                cell.removeAll(keepingCapacity: true)
                let value = row.applies(i) ? row.value(i) : .null
                if case .decoded(.longText(let text)) = value {
                    try LongTextOutput.cell(text, as: delimited, rawCSV: rawCSV, into: &out, spill: spill)
                    continue
                }
                cellText(value, row)
                delimited.appendCell(cell, raw: rawCSV, to: &out)
            }
            out.append(contentsOf: delimited == .csv ? Self.crlf : Self.newline)
        }
    }

    /// Escapes the names the scan has met up to `index`, once each.
    private mutating func names(upTo index: Int, _ row: RowScan.Row) {
        while rowStart.count <= index {
            let name = row.name(rowStart.count)
            if isJSON {
                var text = "{\"\(RowsWriter.entityKey)\":"
                JSONValue.escape(name, into: &text)
                rowStart.append(Array((text + ",\"\(RowsWriter.pkKey)\":").utf8))
                var prefix = ""
                JSONValue.escape(name + "#", into: &prefix)
                objectPrefix.append(Array(prefix.utf8.dropLast()))
            } else {
                var start: [UInt8] = []
                delimited.appendCell(Array(name.utf8), raw: rawCSV, to: &start)
                start.append(delimited.separator)
                rowStart.append(start)
                objectPrefix.append(Array((name + "#").utf8))
            }
        }
    }

    // MARK: JSON values (as `ValueJSON.json(_:)` then `JSONValue.rendered(pretty: false)`)

    private static let null: [UInt8] = Array("null".utf8)
    private static let trueText: [UInt8] = Array("true".utf8)
    private static let falseText: [UInt8] = Array("false".utf8)
    private static let newline: [UInt8] = [0x0A]
    private static let commaNewline: [UInt8] = [0x2C, 0x0A]
    private static let crlf: [UInt8] = [0x0D, 0x0A]
    private static let brace: [UInt8] = [0x7D]
    private static let braceNewline: [UInt8] = [0x7D, 0x0A]

    private mutating func appendJSON(_ value: RawFieldValue, _ row: RowScan.Row, to out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: Self.null)
        case .integer(let i): Self.appendDecimal(i, to: &out)
        case .real(let d): Self.appendJSONDouble(d, to: &out)
        case .bool(let b): out.append(contentsOf: b ? Self.trueText : Self.falseText)
        case .text(let bytes):
            if bytes.allSatisfy({ $0 < 0x80 }) {
                Self.appendJSONString(ascii: bytes, to: &out)
            } else {
                var text = ""
                JSONValue.escape(String(decoding: bytes, as: UTF8.self), into: &text)
                out.append(contentsOf: text.utf8)
            }
        case .date(let seconds):
            out.append(0x22)
            ValueDecoder.appendISO8601(referenceSeconds: seconds, to: &out)
            out.append(0x22)
        case .uuid(let bytes):
            out.append(0x22)
            ValueDecoder.appendUUID(bytes, to: &out)
            out.append(0x22)
        case .object(let name, let pk):
            names(upTo: name, row)
            out.append(contentsOf: objectPrefix[name])
            Self.appendDecimal(pk, to: &out)
            out.append(0x22)
        case .decoded(let v):
            out.append(contentsOf: ValueJSON.json(v).rendered(pretty: false).utf8)
        }
    }

    /// `JSONValue.double`'s text: `%.1f` for whole numbers below 1e15, else Swift's shortest form; null when not finite.
    static func appendJSONDouble(_ d: Double, to out: inout [UInt8]) {
        guard d.isFinite else { out.append(contentsOf: null); return }
        if d == d.rounded() && abs(d) < 1e15 {
            if d == 0 && d.sign == .minus { out.append(0x2D) }
            appendDecimal(Int64(d), to: &out)
            out.append(contentsOf: [0x2E, 0x30])
        } else {
            out.append(contentsOf: "\(d)".utf8)
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// `JSONValue.escape` for ASCII bytes.
    static func appendJSONString(ascii bytes: UnsafeBufferPointer<UInt8>, to out: inout [UInt8]) {
        out.append(0x22)
        var start = 0
        for (i, b) in bytes.enumerated() where b < 0x20 || b == 0x22 || b == 0x5C || b == 0x7F {
            if start < i { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start ..< i])) }
            start = i + 1
            switch b {
            case 0x22: out.append(contentsOf: [0x5C, 0x22])
            case 0x5C: out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, 0x6E])
            case 0x0D: out.append(contentsOf: [0x5C, 0x72])
            case 0x09: out.append(contentsOf: [0x5C, 0x74])
            default: out.append(contentsOf: [0x5C, 0x75, 0x30, 0x30, Self.hex[Int(b >> 4)], Self.hex[Int(b & 0xF)]])
            }
        }
        if start < bytes.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[start...])) }
        out.append(0x22)
    }

    static func appendDecimal(_ v: Int64, to out: inout [UInt8]) {
        if v < 0 { out.append(0x2D) }
        var magnitude = v.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
        withUnsafeMutableBytes(of: &digits) { d in
            var n = 0
            repeat {
                d[23 - n] = UInt8(truncatingIfNeeded: 0x30 + magnitude % 10)
                magnitude /= 10
                n += 1
            } while magnitude > 0
            out.append(contentsOf: d[(24 - n)...])
        }
    }

    // MARK: CSV and TSV cells (as `ValueRendering.cell(_:)` then `Delimited.cell`)

    /// The value's cell text into `cell`.
    private mutating func cellText(_ value: RawFieldValue, _ row: RowScan.Row) {
        switch value {
        case .null: break
        case .integer(let i): Self.appendDecimal(i, to: &cell)
        case .real(let d): cell.append(contentsOf: String(d).utf8)
        case .bool(let b): cell.append(contentsOf: b ? Self.trueText : Self.falseText)
        case .text(let bytes):
            if bytes.allSatisfy({ $0 < 0x80 }) {
                cell.append(contentsOf: bytes)
            } else {
                cell.append(contentsOf: String(decoding: bytes, as: UTF8.self).utf8)
            }
        case .date(let seconds):
            // csv and tsv are for people's tools: dates in the --tz zone, as the old rendering had them.
            if DisplayZone.current.isUTC {
                ValueDecoder.appendISO8601(referenceSeconds: seconds, to: &cell)
            } else {
                cell.append(contentsOf: DisplayZone.current.iso8601(referenceSeconds: seconds).utf8)
            }
        case .uuid(let bytes): ValueDecoder.appendUUID(bytes, to: &cell)
        case .object(let name, let pk):
            names(upTo: name, row)
            cell.append(contentsOf: objectPrefix[name])
            Self.appendDecimal(pk, to: &cell)
        case .decoded(let v): cell.append(contentsOf: ValueRendering.cell(v).utf8)
        }
    }
}
