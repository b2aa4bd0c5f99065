import Foundation

/// A store found in an input and copied into the scratch folder, ready to open.
public struct AcquiredStore {
    /// How to name the store to the user: the path given, or `input!path/inside/container`.
    public let displayPath: String
    /// The store's path inside its container (or the file name for a bare store).
    public let pathInContainer: String
    public let copy: WorkingCopy
}

extension EvidenceSession {
    /// Resolves command-line inputs to stores and makes a working copy of each.
    ///
    /// - Parameter select: `--store PATH`: keep only the store whose path in its container (or
    ///   display path) ends with this, and fail if none or several match.
    public func stores(from inputs: [String], select: String? = nil, options: OpenOptions = OpenOptions()) throws -> [AcquiredStore] {
        var result: [AcquiredStore] = []
        for input in inputs {
            let url = URL(fileURLWithPath: input)
            let copy = try workingCopy(of: url, options: options)
            result.append(AcquiredStore(displayPath: input, pathInContainer: url.lastPathComponent, copy: copy))
        }
        if let select {
            let matches = result.filter { $0.pathInContainer.hasSuffix(select) || $0.displayPath.hasSuffix(select) }
            guard matches.count == 1 else {
                throw AcquisitionError.storeSelection(select: select, candidates: result.map(\.displayPath), matched: matches.count)
            }
            return matches
        }
        return result
    }
}
