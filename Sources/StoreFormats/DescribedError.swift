/// Whose failure an error is: what the command's exit code and a batch line's `exitCode` say.
public enum ErrorClass: Sendable, Equatable {
    /// The command line or an input was wrong: a missing file, not a store, a damaged store (exit 2).
    case input
    /// storelens itself failed: its working folder, its own output, a bug (exit 3).
    case ours

    /// The exit code of this class (docs/exit-codes.md).
    public var exitCode: Int32 { self == .input ? 2 : 3 }
}

/// An error that describes itself to a person: one sentence (what went wrong, and what to do
/// instead) and whose failure it is. Every error type the library throws conforms, next to the
/// type, so that the command's `Error: …` line, a batch line's `error` and a report's problems
/// say the same thing, and a new error type is described the moment it conforms (the command
/// funnels errors through `Storelens.describe`, as swift-argument-parser funnels its errors
/// through one message). It lives here because every library target that throws sees this one.
public protocol DescribedError: Error {
    /// The sentence printed after `Error: `.
    var sentence: String { get }
    var errorClass: ErrorClass { get }
}

extension DescribedError where Self: CustomStringConvertible {
    /// Most error types already say their sentence as their description.
    public var sentence: String { description }
}
