import Foundation
import StoreTestSupport
import Testing

/// docs/architecture.md's layer table against Package.swift: every target the table names imports
/// only targets in its own row or the rows above it, and every library target of the package is
/// in the table, so the page cannot drift from the code.
@Suite("docs/architecture.md's layers are Package.swift's")
struct ArchitectureDocTests {
    /// Target → its row in the table (0 the first).
    static func tableRows() throws -> [String: Int] {
        let text = try String(contentsOf: ProjectPaths.root().appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let section = try #require(text.components(separatedBy: "## The layers").dropFirst().first?.components(separatedBy: "\n## ").first)
        var rows: [String: Int] = [:]
        var row = 0
        for line in section.split(separator: "\n") where line.hasPrefix("|") && !line.hasPrefix("|---") && !line.hasPrefix("| layer") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false)
            guard cells.count > 3 else { continue }
            // An empty first cell continues the layer above: the same row.
            if !cells[1].trimmingCharacters(in: .whitespaces).isEmpty { row += 1 }
            for name in cells[2].split(separator: "`").enumerated().filter({ $0.offset % 2 == 1 }).map({ String($0.element) }) {
                rows[name] = row
            }
        }
        return rows
    }

    /// Target → the targets it depends on, from Package.swift's `.target(name:dependencies:)`.
    static func packageTargets() throws -> [String: [String]] {
        let text = try String(contentsOf: ProjectPaths.root().appendingPathComponent("Package.swift"), encoding: .utf8)
        let target = try Regex(#"\.(?:target|systemLibrary|executableTarget)\(name: "([^"]+)"(?:, dependencies: \[([^\]]*)\])?"#)
        let quoted = try Regex(#""([^"]+)""#)
        var targets: [String: [String]] = [:]
        for match in text.matches(of: target) {
            guard let name = match.output[1].substring.map(String.init) else { continue }
            let list = match.output[2].substring.map(String.init) ?? ""
            targets[name] = list.matches(of: quoted).compactMap { $0.output[1].substring.map(String.init) }
        }
        return targets
    }

    @Test("each target imports only targets in its row or above; every target but the test helpers and the fixtures tool is in the table")
    func layersMatch() throws {
        let rows = try Self.tableRows()
        let targets = try Self.packageTargets()
        #expect(targets.count > 20, "Package.swift read: \(targets.keys.sorted())")
        var violations: [String] = []
        for (name, dependencies) in targets {
            guard let row = rows[name] else {
                if !["StoreBuilder", "StoreTestSupport", "storelens-fixtures", "CBuildInfo"].contains(name) { violations.append("\(name) is not in the table") }
                continue
            }
            for dependency in dependencies {
                guard let below = rows[dependency] else { continue }
                if below > row { violations.append("\(name) (row \(row)) imports \(dependency) (row \(below), a layer above it)") }
            }
        }
        #expect(violations.isEmpty, "\(violations.sorted())")
    }
}
