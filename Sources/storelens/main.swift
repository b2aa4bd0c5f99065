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

let arguments: [String]
switch ArgumentBytes.read() {
case .arguments(let read): arguments = read
case .refused(let index, let shown):
    FileHandle.standardError.write(Data(ArgumentBytes.refusal(index: index, shown: shown).utf8))
    exit(ExitCode.usageOrInput.rawValue)
}
let code = RootCommand.run(arguments)
ScratchRegistry.shared.removeAll()
exit(code.rawValue)
