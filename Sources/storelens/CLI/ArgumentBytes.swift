import Foundation
import StoreFormats

/// Arguments as the process got them, before Swift's `CommandLine.arguments` repaired them: an
/// argument that is not valid UTF-8 (a folder from a device named in another encoding) reaches
/// Swift with U+FFFD in place of its bytes, and would then name a file that does not exist. It
/// is refused, saying what it is and how to give it.
enum ArgumentBytes {
    /// The first argument (after the program name) that is not valid UTF-8, with its bytes shown.
    static func firstInvalid() -> (index: Int, shown: String)? {
        for index in 1 ..< Int(CommandLine.argc) {
            guard let pointer = CommandLine.unsafeArgv[index] else { continue }
            let raw = Array(UnsafeBufferPointer(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer)))
            if String(validating: raw, as: UTF8.self) == nil { return (index, HostileText.bytes(raw)) }
        }
        return nil
    }

    static func refusal(_ invalid: (index: Int, shown: String)) -> String {
        "Error: argument \(invalid.index) (\(invalid.shown)) is not valid UTF-8, and storelens takes paths as UTF-8: "
            + "link the folder under a UTF-8 name (ln -s 'THE FOLDER' pulled-evidence) and give that path; a linked folder is read like the folder itself.\n"
    }
}
