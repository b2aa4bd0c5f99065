import Foundation
import StoreBuilder

// Writes the sample stores in Fixtures/ and the benchmark corpus with the project's store builder.
//
//   storelens-fixtures <Fixtures folder>                 the demo container
//   storelens-fixtures bench-store <file> <rows> [batch [wal-share | <n>MB]]
//                                                        a large store with history and a WAL: rows/batch history
//                                                        transactions (batch 100), the last wal-share of them (0.25) in
//                                                        the WAL, or as many as make a WAL of at least <n> MB

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("storelens-fixtures: \(message)\n".utf8))
    exit(2)
}

let usage = """
    usage: storelens-fixtures <Fixtures folder>
           storelens-fixtures bench-store <file> <rows> [rows per transaction [share of transactions in the WAL | <n>MB of WAL]]

    Writes the demo container (and its manifest) into the folder, or a large benchmark store.

    """

let arguments = Array(CommandLine.arguments.dropFirst())
do {
    switch arguments.first {
    case "--help"?, "-h"?, "help"?:
        print(usage, terminator: "")
    case let option? where option.hasPrefix("-"):
        // Never a folder named after an option someone mistyped.
        fail("unknown option '\(option)'; run storelens-fixtures --help.")
    case "bench-store":
        // The last argument is a share of the transactions (0.25) or a WAL size ("100MB").
        let last = arguments.count == 5 ? arguments[4].lowercased() : nil
        let walBytes = last.flatMap { $0.hasSuffix("mb") ? Int($0.dropLast(2)).map { $0 << 20 } : nil }
        guard (3...5).contains(arguments.count), let rows = Int(arguments[2]), rows > 0,
              let batch = arguments.count >= 4 ? Int(arguments[3]) : 100, batch > 0,
              let walShare = walBytes != nil ? 0.25 : (last.map { Double($0) } ?? 0.25), (0...1).contains(walShare) else {
            fail("usage: storelens-fixtures bench-store <file> <rows> [rows per transaction [share of transactions in the WAL | <n>MB of WAL]]")
        }
        try BenchCorpus.write(to: URL(fileURLWithPath: arguments[1]), rows: rows, batch: batch, walShare: walShare, walBytes: walBytes)
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
