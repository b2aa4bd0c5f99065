import Acquisition
import Dispatch
import Foundation

// libarchive and path handling need a UTF-8 locale; a Swift program starts in "C".
setlocale(LC_ALL, "C.UTF-8")


// Ctrl-C and SIGTERM remove the scratch folders before exiting. The handler runs on a
// dispatch queue, not in signal context, so it may touch the file system.
var signalSources: [DispatchSourceSignal] = []
for sig in [SIGINT, SIGTERM, SIGHUP] {
    signal(sig, SIG_IGN)
    let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
    source.setEventHandler {
        ScratchRegistry.shared.removeAll()
        exit(128 + sig)
    }
    source.resume()
    signalSources.append(source)
}

let code = Storelens.run(Array(CommandLine.arguments.dropFirst()))
ScratchRegistry.shared.removeAll()
exit(code.rawValue)
