import Foundation

/// CSV as storelens writes it, read back independently of it.
enum CSVRecords {
    /// RFC 4180 records (quoted fields, doubled quotes, CRLF).
    static func parse(_ text: String) -> [[String]] {
        var records: [[String]] = [], field = "", record: [String] = [], quoted = false
        var scalars = text.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar? = nil
        while let c = pending ?? scalars.next() {
            pending = nil
            if quoted {
                if c == "\"" {
                    let next = scalars.next()
                    if next == "\"" { field.unicodeScalars.append("\"") } else { quoted = false; pending = next }
                } else { field.unicodeScalars.append(c) }
            } else if c == "\"" { quoted = true
            } else if c == "," { record.append(field); field = ""
            } else if c == "\r" {
                let next = scalars.next()
                if next == "\n" { record.append(field); records.append(record); record = []; field = "" } else { field.unicodeScalars.append(c); pending = next }
            } else { field.unicodeScalars.append(c) }
        }
        return records
    }
}
