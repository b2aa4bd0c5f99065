import Foundation
import StoreBuilder

// Writes the sample stores in Fixtures/ and the benchmark corpus with the project's store builder.
//
//   storelens-fixtures <Fixtures folder>                 the demo container
//   storelens-fixtures bench-store <file> <rows>         a large store with history and a WAL

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("storelens-fixtures: \(message)\n".utf8))
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "bench-store":
        guard arguments.count == 3, let rows = Int(arguments[2]), rows > 0 else {
            fail("usage: storelens-fixtures bench-store <file> <rows>")
        }
        try BenchCorpus.write(to: URL(fileURLWithPath: arguments[1]), rows: rows)
    case let out?:
        let container = URL(fileURLWithPath: out).appendingPathComponent("demo-container")
        try DemoContainer.write(into: container)
        try Data(DemoContainer.manifest.utf8).write(to: URL(fileURLWithPath: out).appendingPathComponent("demo-container.storelens.json"))
        print("wrote \(container.path) and its manifest")
    case nil:
        fail("usage: storelens-fixtures <Fixtures folder> | bench-store <file> <rows>")
    }
} catch {
    fail("\(error)")
}
