import Acquisition
import StoreFormats

extension Storelens {
    /// What an error says to a person, and whose failure it is: the command's `Error: …` line
    /// and its exit code, a batch line's `error` and `exitCode`, a report's problem.
    public struct ErrorDescription: Sendable, Equatable {
        /// The sentence after `Error: `.
        public let sentence: String
        public let errorClass: ErrorClass

        public init(sentence: String, errorClass: ErrorClass) {
            self.sentence = sentence
            self.errorClass = errorClass
        }

        /// 2 (the input's or the command line's failure) or 3 (storelens' own).
        public var exitCode: Int32 { errorClass.exitCode }
    }

    /// The one funnel every error passes on its way to a person: what it says of itself
    /// (`DescribedError`), except that storelens' own I/O failure, in whatever layer it surfaced
    /// (SQLite's "disk full" while copying, a working copy that could not be written), is told as
    /// ours and never as the evidence's. An error that does not describe itself is a bug:
    /// "internal error", exit 3.
    public static func describe(_ error: Error) -> ErrorDescription {
        if let ours = WorkingFolderFailure.from(error) { return ErrorDescription(sentence: ours.description, errorClass: .ours) }
        if let described = error as? DescribedError { return ErrorDescription(sentence: described.sentence, errorClass: described.errorClass) }
        return ErrorDescription(sentence: "internal error: \(error); please report this with the command you ran.", errorClass: .ours)
    }
}
