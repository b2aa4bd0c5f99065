import Acquisition
import Dispatch
import Foundation
import SQLiteAccess
import StoreFormats

// libarchive and path handling need a UTF-8 locale; a Swift program starts in "C".
setlocale(LC_ALL, "C.UTF-8")
Interrupts.install()
// STORELENS_TIMINGS (make bench): the libraries' own measurements as `timing …` lines on stderr.
if let timings = Timings.fromEnvironment {
    Timings.process = timings
    Connection.slowStatements = { timings.record($0) }
}

if let invalid = ArgumentBytes.firstInvalid() {
    FileHandle.standardError.write(Data(ArgumentBytes.refusal(invalid).utf8))
    exit(ExitCode.usageOrInput.rawValue)
}
let code = RootCommand.run(Array(CommandLine.arguments.dropFirst()))
ScratchRegistry.shared.removeAll()
exit(code.rawValue)
