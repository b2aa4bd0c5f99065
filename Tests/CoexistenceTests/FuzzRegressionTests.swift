import Coexistence
import Foundation
import StoreTestSupport
import Testing

/// The manifest parser's fuzz inputs (Fuzz/regressions/manifest, Fuzz/corpus/manifest), replayed
/// through `Manifest.parse` as `make fuzz` calls it (Fuzz/ManifestFuzz.swift).
@Suite("manifest fuzz regression inputs")
struct ManifestFuzzRegressionTests {
    @Test("every regression input and seed parses or fails with a ManifestError")
    func replay() throws {
        let fuzz = ProjectPaths.root().appendingPathComponent("Fuzz")
        var count = 0
        for folder in ["regressions/manifest", "corpus/manifest"] {
            let dir = fuzz.appendingPathComponent(folder)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? [] where !name.hasPrefix(".") {
                let text = String(decoding: try Data(contentsOf: dir.appendingPathComponent(name)), as: UTF8.self)
                do {
                    _ = try Manifest.parse(text, path: name)
                } catch is ManifestError {
                } catch {
                    Issue.record("\(name): Manifest.parse threw \(error), not a ManifestError")
                }
                count += 1
            }
        }
        #expect(count >= 3)
    }

    /// fuzz-manifest, index out of range: a bare word made of number characters at the end of the
    /// file ("E", "1e") was reported with the character after it, which does not exist.
    @Test("number-like text at the end of the file is a syntax error with a position", arguments: ["E", "1e", "-", "[1.2.3", "{\"a\": 1e"])
    func numberAtEndOfFile(_ text: String) {
        #expect(throws: ManifestError.self) { try Manifest.parse(text, path: "m.json") }
        do {
            _ = try Manifest.parse(text, path: "m.json")
        } catch let error as ManifestError {
            #expect(error.line == 1)
            #expect(error.problem.hasPrefix("not valid JSON"), "\(error)")
        } catch {
            Issue.record("\(error)")
        }
    }
}
