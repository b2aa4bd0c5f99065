import Foundation
import StoreBuilder

// Writes the sample stores in Fixtures/ with the project's store builder. Deterministic:
// fixed UUIDs, dates and contents, so regenerating gives the same logical stores.

let arguments = CommandLine.arguments.dropFirst()
guard let out = arguments.first else {
    FileHandle.standardError.write(Data("usage: storelens-fixtures <Fixtures folder>\n".utf8))
    exit(2)
}
let root = URL(fileURLWithPath: out)

do {
    try DemoContainer.write(into: root.appendingPathComponent("demo-container"))
    print("wrote \(root.appendingPathComponent("demo-container").path)")
} catch {
    FileHandle.standardError.write(Data("storelens-fixtures: \(error)\n".utf8))
    exit(1)
}
