import Acquisition
import Dispatch
import Foundation

/// Ctrl-C, SIGTERM, SIGHUP and SIGXCPU remove the scratch folders before exiting; SIGPIPE and SIGXFSZ
/// are ignored (their writes fail instead, and the ordinary error path removes scratch).
///
/// The handlers run on a dispatch queue, not in signal context, so they may touch the file
/// system. They are installed from a nonisolated function: top-level code is main-actor
/// isolated and a closure made there would trap when it runs on another queue.
enum Interrupts {
    nonisolated(unsafe) private static var sources: [DispatchSourceSignal] = []

    static func install() {
        // A reader that goes away is seen as EPIPE on the next write to stdout (`Output.write`),
        // which removes scratch; the default action would kill the process with scratch left behind.
        signal(SIGPIPE, SIG_IGN)
        // A file-size limit (`ulimit -f`) crossed while writing scratch or an output: the write
        // fails with EFBIG, which the command reports as its own failure and cleans up after; the
        // default action would kill the process with its partial working copy left behind.
        signal(SIGXFSZ, SIG_IGN)
        // SIGXCPU: a CPU-time limit (`ulimit -t`) crossed; its default action would end the
        // process with its working folder left behind.
        for sig in [SIGINT, SIGTERM, SIGHUP, SIGXCPU] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler(handler: { @Sendable in
                ScratchRegistry.shared.removeAll()
                // _exit, not exit: the main thread is still running and must not race atexit handlers.
                _exit(128 + sig)
            })
            source.resume()
            sources.append(source)
        }
    }
}
