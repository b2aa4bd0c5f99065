import Foundation
import StoreFormats

/// Builds a `PlistValue` from the elements of an XML property list as a SAX parser meets them
/// (the `<metadata>` of an XML store holds one inline). Nesting is bounded by the caller's depth
/// limit; a value that is not its type (`<integer>x</integer>`) is kept as a string.
final class PlistBuilder {
    private enum Frame {
        case dictionary([String: PlistValue], pendingKey: String?)
        case array([PlistValue])
        case root
    }
    private var stack: [Frame] = [.root]
    private(set) var top: PlistValue?

    /// The top-level dictionary, or empty when the plist held something else.
    var dictionary: [String: PlistValue] {
        if case .dictionary(let members)? = top { return members }
        return [:]
    }

    func start(_ name: String) {
        switch name {
        case "dict": stack.append(.dictionary([:], pendingKey: nil))
        case "array": stack.append(.array([]))
        default: break
        }
    }

    func end(_ name: String, text: String) {
        switch name {
        case "dict", "array":
            guard stack.count > 1 else { return }
            switch stack.removeLast() {
            case .dictionary(let members, _): add(.dictionary(members))
            case .array(let items): add(.array(items))
            case .root: break
            }
        case "key":
            if case .dictionary(let members, _)? = stack.last {
                stack[stack.count - 1] = .dictionary(members, pendingKey: text)
            }
        case "string": add(.string(text))
        case "integer": add(Int64(text.trimmingCharacters(in: .whitespacesAndNewlines)).map(PlistValue.integer) ?? .string(text))
        case "real": add(Double(text.trimmingCharacters(in: .whitespacesAndNewlines)).map(PlistValue.real) ?? .string(text))
        case "true": add(.bool(true))
        case "false": add(.bool(false))
        case "data": add(Data(base64Encoded: text, options: .ignoreUnknownCharacters).map(PlistValue.data) ?? .string(text))
        case "date":
            let date = ISO8601DateFormatter().date(from: text.trimmingCharacters(in: .whitespacesAndNewlines))
            add(date.map { .date($0.timeIntervalSinceReferenceDate) } ?? .string(text))
        default: break
        }
    }

    private func add(_ value: PlistValue) {
        // Taken off the stack before it grows, so the container is never copied (a long array
        // would otherwise cost quadratic time).
        guard stack.count > 1 else {
            if top == nil { top = value }
            return
        }
        switch stack.removeLast() {
        case .dictionary(var members, let key):
            if let key { members[key] = value }
            stack.append(.dictionary(members, pendingKey: nil))
        case .array(var items):
            items.append(value)
            stack.append(.array(items))
        case .root:
            stack.append(.root)
        }
    }
}
