import Foundation
import PackagePlugin

/// `swift package storelens <subcommand> …`: storelens itself, built from this package, run from
/// the package it is invoked in (its folder as the working directory), so an app's CI lints its
/// model, checks its fixture stores or plans a migration with the package it already depends on,
/// instead of installing a binary. Arguments, output and the exit status are storelens's own:
///
///     swift package storelens lint --model MyApp/Model.xcdatamodeld --format sarif > lint.sarif
///
/// storelens reads its inputs without changing them and writes only the outputs it is told to; a
/// command with `--out` writes into the package needs `--allow-writing-to-package-directory`.
@main
struct StorelensCommand: CommandPlugin {
    func performCommand(context: PluginContext, arguments: [String]) async throws {
        let tool = try context.tool(named: "storelens")
        let process = Process()
        process.executableURL = tool.url
        process.arguments = arguments
        process.currentDirectoryURL = context.package.directoryURL
        try process.run()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            // storelens has said why on stderr; its exit status carries the verdict (1: findings).
            Diagnostics.error("storelens \(arguments.first ?? "") exited with status \(process.terminationStatus)")
            throw StorelensFailed(status: process.terminationStatus)
        }
    }
}

struct StorelensFailed: Error, CustomStringConvertible {
    let status: Int32
    var description: String { "storelens exited with status \(status)" }
}
