import Foundation

/// A headless Chromium for the report's browser tests, where one is installed.
enum Chromium {
    /// STORELENS_CHROMIUM, else the first Chromium or Chrome on PATH or in /Applications; nil when none.
    static func executable() -> String? {
        let env = ProcessInfo.processInfo.environment
        if let path = env["STORELENS_CHROMIUM"], FileManager.default.isExecutableFile(atPath: path) { return path }
        let names = ["chromium", "chromium-browser", "google-chrome", "google-chrome-stable"]
        for dir in (env["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            for name in names where FileManager.default.isExecutableFile(atPath: "\(dir)/\(name)") { return "\(dir)/\(name)" }
        }
        for app in ["/Applications/Chromium.app/Contents/MacOS/Chromium", "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome"]
            where FileManager.default.isExecutableFile(atPath: app) { return app }
        return nil
    }

    static let missing = "chromium is not installed; `make test` (scripts/install-deps.sh --with-browser, as root on Debian) installs it, or set STORELENS_CHROMIUM"
}
