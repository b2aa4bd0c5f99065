import StoreFormats

/// A problem with what was asked for, found once the inputs are read (a --store that matches no
/// store, --as-of on a store without WAL commits): one sentence saying what to do instead.
public struct InputError: Error, CustomStringConvertible {
    public let message: String

    public init(message: String) {
        self.message = message
    }

    public var description: String { message }
}

extension InputError: DescribedError {
    public var errorClass: ErrorClass { .input }
}
