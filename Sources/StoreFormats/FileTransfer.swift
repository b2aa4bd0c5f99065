import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one loop that moves a whole run of bytes through `read`/`write`-like calls, for every
/// caller that must not take a short transfer for a whole one (images, output files, stdout).
public enum FileTransfer {
    /// Moves `count` bytes at file offset `offset` with `step(done, offset + done)` (a `pread`,
    /// `pwrite` or `write` of what is left), retrying after EINTR; 0, or the errno (EIO for a
    /// call that moved nothing: a file that ends early).
    public static func all(_ count: Int, at offset: Int = 0, _ step: (_ done: Int, _ at: off_t) -> Int) -> Int32 {
        var done = 0
        while done < count {
            let n = step(done, off_t(offset + done))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return n == 0 ? EIO : errno }
            done += n
        }
        return 0
    }
}
