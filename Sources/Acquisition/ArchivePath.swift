/// Turns a path named inside an archive or backup into a safe relative path, or refuses it.
///
/// Names in archives come from whoever made the archive. The rules (the tool never calls
/// `archive_write_disk`, so sanitising is its own job): reject any `..` component rather than
/// resolve it; strip leading `/` and record it; drop `.` and empty components; keep backslashes
/// as ordinary characters (a Windows-made `..\x` is one odd name on Linux, not traversal);
/// refuse NUL bytes and names that are empty after cleaning.
public enum ArchivePath {
    public enum Verdict: Equatable, Sendable {
        /// A safe relative path; `wasAbsolute` when a leading `/` was stripped.
        case safe(components: [String], wasAbsolute: Bool)
        case rejected(reason: String)
    }

    /// Longest path accepted, and deepest nesting: bounds for names from hostile archives.
    public static let maxLength = 4096
    public static let maxComponents = 256

    public static func sanitize(_ raw: String) -> Verdict {
        guard !raw.isEmpty else { return .rejected(reason: "empty name") }
        guard raw.utf8.count <= maxLength else { return .rejected(reason: "name longer than \(maxLength) bytes") }
        guard !raw.unicodeScalars.contains("\0") else { return .rejected(reason: "name contains a NUL byte") }
        // Split on the "/" scalar, not on Characters: "/" followed by a combining mark is one
        // Character, so "../\u{301}x" would stay one component that the file system reads as "..".
        let wasAbsolute = raw.unicodeScalars.first == "/"
        var components: [String] = []
        for scalars in raw.unicodeScalars.split(separator: "/", omittingEmptySubsequences: true) {
            let part = String(String.UnicodeScalarView(scalars))
            if scalars.elementsEqual(".".unicodeScalars) { continue }
            if scalars.elementsEqual("..".unicodeScalars) { return .rejected(reason: "path traversal (\"..\")") }
            components.append(part)
        }
        guard !components.isEmpty else { return .rejected(reason: "no file name after cleaning") }
        guard components.count <= maxComponents else { return .rejected(reason: "nested more than \(maxComponents) levels") }
        for c in components where c.utf8.count > 255 {
            return .rejected(reason: "a path component is longer than 255 bytes: \(c.prefix(20))…")
        }
        return .safe(components: components, wasAbsolute: wasAbsolute)
    }

    /// A backup's file, named by Manifest.db as `domain` and `relativePath`. Both come from the
    /// device: the domain must be one plain name (`AppDomain-com.example.app`), never a path, and
    /// the relative path passes `sanitize`. The verdict's components start with the domain.
    public static func sanitize(domain: String, relativePath: String) -> Verdict {
        guard !domain.isEmpty else { return .rejected(reason: "empty domain") }
        guard domain.utf8.count <= 255 else { return .rejected(reason: "a domain longer than 255 bytes") }
        guard !domain.unicodeScalars.contains("\0") else { return .rejected(reason: "a domain containing a NUL byte") }
        guard !domain.unicodeScalars.contains("/") else { return .rejected(reason: "a domain containing \"/\" (a domain is one name, never a path)") }
        guard domain != ".", domain != ".." else { return .rejected(reason: "path traversal (\"..\") in the domain") }
        switch sanitize(relativePath) {
        case .rejected(let reason): return .rejected(reason: reason)
        case .safe(let components, let wasAbsolute):
            guard components.count < maxComponents else { return .rejected(reason: "nested more than \(maxComponents) levels") }
            return .safe(components: [domain] + components, wasAbsolute: wasAbsolute)
        }
    }

    /// Raw name bytes that are not valid UTF-8 are kept distinguishable: each invalid byte becomes
    /// `%XX`, so `caf\xe9.db` and `caf\xc3\xa9.db` never collide.
    public static func decode(rawBytes: [UInt8]) -> String {
        if let s = String(validating: rawBytes, as: UTF8.self) { return s }
        var out = ""
        var i = 0
        while i < rawBytes.count {
            // Take the longest valid UTF-8 run starting here, else escape one byte.
            var j = min(rawBytes.count, i + 4)
            var matched = false
            while j > i {
                if let s = String(validating: rawBytes[i..<j], as: UTF8.self), s.unicodeScalars.count == 1 {
                    out += s
                    i = j
                    matched = true
                    break
                }
                j -= 1
            }
            if !matched {
                out += "%" + String(rawBytes[i], radix: 16, uppercase: true).leftPadded(to: 2)
                i += 1
            }
        }
        return out
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
