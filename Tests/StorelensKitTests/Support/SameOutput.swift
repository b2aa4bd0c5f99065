import Foundation
import StoreTestSupport
import Testing

/// One comparison for the suites that hold the command to the library: the command run as a
/// user runs it, the library called in this process.
enum SameOutput {
    /// What the command prints and what the library gives, rendered the same way; where the
    /// library refuses the input, the command refuses it too (exit 2 or 3), in the same sentence.
    /// (Nothing on both sides agrees: `lint` of plain SQLite prints no model, only a note.)
    static func expect(_ arguments: [String], _ library: () throws -> String) throws {
        let command = try CLI.run(arguments)
        let name = "storelens " + arguments.joined(separator: " ")
        #expect(command.status < 128 && !command.stderr.contains("Fatal error"), "\(name): \(command.stderr)")
        do {
            let answer = try library()
            #expect([0, 1, 2].contains(command.status), "\(name): \(command.stderr)")
            #expect(command.stdout == answer, "\(name) and the library differ")
        } catch {
            #expect([2, 3].contains(command.status) && command.stdout.isEmpty, "\(name) answered where the library threw \(error)")
            #expect(command.stderr.contains("\(error)"), "\(name) says \(command.stderr), the library \(error)")
        }
    }
}
