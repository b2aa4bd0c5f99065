import Acquisition
import Dispatch
import Foundation

// libarchive and path handling need a UTF-8 locale; a Swift program starts in "C".
setlocale(LC_ALL, "C.UTF-8")
Interrupts.install()

let code = RootCommand.run(Array(CommandLine.arguments.dropFirst()))
ScratchRegistry.shared.removeAll()
exit(code.rawValue)
