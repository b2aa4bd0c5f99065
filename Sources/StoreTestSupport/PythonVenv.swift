import Foundation

/// A Python virtualenv under `.build/` with packages from PyPI (test oracles: sqlite-utils, a
/// JSON Schema validator), made once and reused by later runs. Nil, with the reason printed, when
/// none can be made (no python3-venv, no network to PyPI): the tests that need it are skipped.
public enum PythonVenv {
    /// The virtualenv `name` with `packages` installed, or nil. `probe` (a program of the venv and
    /// its arguments) must succeed for a venv made earlier to be reused.
    public static func make(_ name: String, packages: [String], probe: [String]) -> URL? {
        let venv = ProjectPaths.root().appendingPathComponent(".build/sltest-venv-\(name)")
        // Written last: a virtualenv without it was stopped half-way and is made again. (A
        // virtualenv cannot be moved into place: its scripts name their own folder.)
        let complete = venv.appendingPathComponent("sltest-complete")
        let check = [venv.appendingPathComponent("bin/" + probe[0]).path] + probe.dropFirst()
        if FileManager.default.fileExists(atPath: complete.path), run(check).status == 0 { return venv }
        try? FileManager.default.removeItem(at: venv)
        for (step, arguments) in [("python3 -m venv", ["python3", "-m", "venv", venv.path]),
                                  ("pip install \(packages.joined(separator: " "))",
                                   [venv.appendingPathComponent("bin/pip").path, "install", "--quiet", "--disable-pip-version-check",
                                    "--timeout", "30", "--retries", "2"] + packages)] {
            let result = run(arguments)
            if result.status != 0 {
                print("PythonVenv \(name): \(step) failed (\(result.status)): \(result.stderr.suffix(600))")
                return nil
            }
        }
        let probed = run(check)
        guard probed.status == 0 else {
            print("PythonVenv \(name): \(check.joined(separator: " ")) failed after installing: \(probed.stderr.suffix(600))")
            return nil
        }
        FileManager.default.createFile(atPath: complete.path, contents: Data(probed.stdout.utf8))
        return venv
    }

    public struct Result: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String
    }

    /// Runs `arguments` (a program found on PATH, or a path) with no standard input.
    public static func run(_ arguments: [String]) -> Result {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch { return Result(status: -1, stdout: "", stderr: "\(error)") }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Result(status: process.terminationStatus, stdout: String(decoding: outData, as: UTF8.self),
                      stderr: String(decoding: errData, as: UTF8.self))
    }
}
