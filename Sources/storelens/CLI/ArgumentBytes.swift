import Acquisition
import Foundation
import StoreFormats

/// Arguments as the process got them, before Swift's `CommandLine.arguments` repaired them: an
/// argument that is not valid UTF-8 (a folder from a device named in another encoding) reaches
/// Swift with U+FFFD in place of its bytes, and would then name a file that does not exist.
/// Paths are bytes: such a path is read through an alias of its folder (`RawPath`); what cannot
/// be (a file name itself not UTF-8, a value that is no path) is refused, saying what and how.
enum ArgumentBytes {
    enum Reading {
        case arguments([String])
        case refused(index: Int, shown: String)
    }

    /// The arguments after the program name, those not UTF-8 made readable paths.
    static func read() -> Reading {
        var arguments: [String] = []
        for index in 1 ..< Int(CommandLine.argc) {
            guard let pointer = CommandLine.unsafeArgv[index] else { continue }
            let raw = Array(UnsafeBufferPointer(start: UnsafeRawPointer(pointer).assumingMemoryBound(to: UInt8.self), count: strlen(pointer)))
            guard let readable = RawPath.argument(raw) else { return .refused(index: index, shown: HostileText.bytes(raw)) }
            arguments.append(readable)
        }
        return .arguments(arguments)
    }

    static func refusal(index: Int, shown: String) -> String {
        "Error: argument \(index) (\(shown)) is not valid UTF-8 and names no folder storelens can read it through: "
            + "a file whose own name is not UTF-8 is found with its -wal and -shm by that name, so copy them to UTF-8 names (cp) and give that path.\n"
    }
}
