/// The facts of a `-wal`'s header and frame walk that `inspect` and `wal` both report: one
/// protocol so that both documents give the same fact under the same name.
public protocol WALWalkSummary {
    /// Whole frames in the file, valid or not.
    var frames: Int { get }
    /// Frames SQLite accepts (its walk stops at the first bad one).
    var validFrames: Int { get }
    var commits: Int { get }
    /// SQLite's mxFrame: the last valid commit frame.
    var lastCommitFrame: Int { get }
    var pageSize: Int? { get }
    var salt1: UInt32? { get }
    var salt2: UInt32? { get }
    var checkpointSequence: UInt32? { get }
}
