import Foundation
import PackagePlugin

/// `swift package storelens <subcommand> …`: storelens itself, built from this package, run from
/// the package it is invoked in (its folder as the working directory), so an app's CI lints its
/// model, checks its fixture stores or plans a migration with the package it already depends on,
/// instead of installing a binary. Arguments and output are storelens's own; its exit status is
/// in SwiftPM's last line (`swift package` itself ends with 1 on any failure; docs/library.md):
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
        // storelens has said why on stderr; its exit status is the verdict (1 findings, 2 bad
        // input, 3 its own failure, 128 + N a signal). SwiftPM ends `swift package` with 1 for any
        // failing plugin, but names the plugin's own status ("Plugin ended with exit code N"), so
        // the plugin exits with storelens' status and adds no message of its own.
        exit(process.terminationReason == .exit ? process.terminationStatus : 128 + process.terminationStatus)
    }
}
