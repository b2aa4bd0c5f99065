import Foundation

/// What an XML document declares, read before any parser sees it, so that libxml2 has nothing
/// to expand (billion laughs), fetch or even `stat` (an external entity): FoundationXML turns
/// entity substitution and error recovery on whatever it is told, so a refused construct must
/// never reach it. One pass over the bytes, skipping what XML does not read as markup (comments,
/// CDATA sections, processing instructions, quoted attribute values and literals):
/// - a DOCTYPE is allowed once, before the first element, naming an external DTD at most (Core
///   Data's `<!DOCTYPE database SYSTEM "file:///System/Library/DTDs/CoreData.dtd">`, never
///   loaded: external entities are off) and never with an internal subset (`[`);
/// - any other declaration (`<!ENTITY`, `<!ELEMENT`, `<!ATTLIST`, `<!NOTATION`), anywhere, is refused;
/// - every `&` starts one of XML's five predefined entities or a character reference: with no
///   DTD any other is undefined, which libxml2 in recovery mode silently drops.
enum XMLDeclarations {
    /// The first thing the document declares or refers to that it may not, as a sentence; nil when none.
    static func problem(in data: Data, allowingDoctype: Bool) -> String? {
        data.withUnsafeBytes { raw -> String? in
            let bytes = raw.bindMemory(to: UInt8.self)
            var scan = Scan(bytes: bytes, allowingDoctype: allowingDoctype)
            return scan.run()
        }
    }

    private struct Scan {
        let bytes: UnsafeBufferPointer<UInt8>
        let allowingDoctype: Bool
        var i = 0
        var sawElement = false
        var sawDoctype = false

        init(bytes: UnsafeBufferPointer<UInt8>, allowingDoctype: Bool) {
            self.bytes = bytes
            self.allowingDoctype = allowingDoctype
        }

        static let lt = UInt8(ascii: "<"), amp = UInt8(ascii: "&"), gt = UInt8(ascii: ">")

        mutating func run() -> String? {
            while i < bytes.count {
                switch bytes[i] {
                case Self.amp:
                    if let problem = reference() { return problem }
                case Self.lt:
                    if let problem = markup() { return problem }
                default:
                    i += 1
                }
            }
            return nil
        }

        func starts(_ text: String, at position: Int) -> Bool {
            let utf8 = Array(text.utf8)
            guard position + utf8.count <= bytes.count else { return false }
            for (k, byte) in utf8.enumerated() where bytes[position + k] != byte { return false }
            return true
        }

        /// The position just past the first `terminator` at or after `from`, or nil.
        func past(_ terminator: String, from: Int) -> Int? {
            let t = Array(terminator.utf8)
            var j = from
            while j + t.count <= bytes.count {
                if bytes[j] == t[0], starts(terminator, at: j) { return j + t.count }
                j += 1
            }
            return nil
        }

        /// `&…;` at `i`: one of the five predefined entities or a character reference.
        mutating func reference() -> String? {
            var j = i + 1
            var name: [UInt8] = []
            while j < bytes.count, bytes[j] != UInt8(ascii: ";"), name.count < 12 {
                name.append(bytes[j])
                j += 1
            }
            let text = String(decoding: name, as: UTF8.self)
            let predefined = ["amp", "lt", "gt", "quot", "apos"].contains(text)
            let decimal = text.hasPrefix("#") && text.count > 1 && text.dropFirst().allSatisfy(\.isASCII) && text.dropFirst().allSatisfy(\.isNumber)
            let hex = text.hasPrefix("#x") && text.count > 2 && text.dropFirst(2).allSatisfy(\.isHexDigit)
            guard j < bytes.count, bytes[j] == UInt8(ascii: ";"), predefined || decimal || hex else {
                let shown = text.unicodeScalars.filter { $0.properties.isAlphabetic || ("0"..."9").contains($0) }.prefix(12)
                return "it refers to an entity (&\(String(String.UnicodeScalarView(shown)));) that is not one of XML's five predefined ones, which Core Data never writes; storelens expands no entities"
            }
            i = j + 1
            return nil
        }

        mutating func markup() -> String? {
            if starts("<!--", at: i) {
                guard let end = past("-->", from: i + 4) else { return cutOff("a comment") }
                i = end
            } else if starts("<![CDATA[", at: i) {
                guard let end = past("]]>", from: i + 9) else { return cutOff("a CDATA section") }
                i = end
            } else if starts("<?", at: i) {
                guard let end = past("?>", from: i + 2) else { return cutOff("a processing instruction") }
                i = end
            } else if starts("<!DOCTYPE", at: i) {
                guard allowingDoctype else { return "it declares a DTD (<!DOCTYPE), which this kind of file never has" }
                guard !sawDoctype, !sawElement else { return "it has a DOCTYPE where XML allows none (a second one, or after the first element)" }
                sawDoctype = true
                return tag(from: i + 9, refusing: "its DOCTYPE declares a DTD subset or entities, which Core Data never writes; storelens expands no entities")
            } else if starts("<!", at: i) {
                return "it declares \(starts("<!ENTITY", at: i) ? "entities" : "DTD content") (<!…), which Core Data never writes; storelens expands no entities"
            } else {
                sawElement = true
                return tag(from: i + 1, refusing: nil)
            }
            return nil
        }

        /// Walks a tag to its closing `>`, through quoted values (whose `&` references are checked
        /// too); `refusing`: a `[` outside quotes (a DOCTYPE's internal subset) is that problem.
        mutating func tag(from start: Int, refusing bracket: String?) -> String? {
            var j = start
            var quote: UInt8?
            while j < bytes.count {
                let byte = bytes[j]
                if let q = quote {
                    if byte == q {
                        quote = nil
                    } else if byte == Self.amp, bracket == nil {
                        i = j
                        if let problem = reference() { return problem }
                        j = i
                        continue
                    }
                } else if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                    quote = byte
                } else if byte == UInt8(ascii: "["), let bracket {
                    return bracket
                } else if byte == Self.gt {
                    i = j + 1
                    return nil
                }
                j += 1
            }
            return cutOff("a tag")
        }

        /// The file ends inside `what`, which began at `i`: cut off (said with its line, as the
        /// parser would), and nothing after it may reach the parser's recovery.
        func cutOff(_ what: String) -> String {
            let line = bytes[..<i].reduce(1) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
            return "line \(line): the file ends inside \(what), so it is cut off"
        }
    }
}
