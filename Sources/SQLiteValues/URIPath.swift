/// A path as the path of a `file:` URI: every byte but unreserved ones and `/` as `%HH`, so a `?`,
/// `#` or `%` in a folder name cannot end the path or start a parameter. SQLite's URI filenames
/// (`Connection.openImmutable`, `attachEvidence`) and a SARIF log's artifact locations both use it.
public enum URIPath {
    public static func escaped(_ path: String) -> String {
        var out = ""
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                out += "%" + (hex.count < 2 ? "0" + hex : hex)
            }
        }
        return out
    }
}
