import Foundation
import StoreFormats

/// Why no password could be had. Never carries the password or any part of it.
public enum BackupPasswordError: Error, Equatable, Sendable, CustomStringConvertible {
    /// An encrypted backup, and no way to ask for its password.
    case required(backup: String)
    case fileUnreadable(path: String, reason: String)
    case empty(source: String)
    case tooLong(source: String, limit: Int)
    /// A folder, a device, a socket: not something a password is read from.
    case unsupportedKind(path: String, kind: String)
    /// A pipe that nobody wrote to and closed within the wait (`received` bytes came).
    case nothingArrived(path: String, seconds: Int, received: Bool)
    /// Ctrl-C or Ctrl-D at the prompt.
    case cancelled

    public var description: String {
        switch self {
        case .required(let backup):
            return "\(backup) is an encrypted backup and no password was given; run storelens in a terminal to be asked for it, or give it with --password-file FILE or the STORELENS_BACKUP_PASSWORD variable (never on the command line)."
        case .fileUnreadable(let path, let reason):
            return "the password file \(path) cannot be read (\(reason)); check the path and its permissions."
        case .empty(let source):
            return "\(source) gives an empty password; an encrypted backup always has one — check that the right file or variable was used."
        case .tooLong(let source, let limit):
            return "\(source) holds more than \(limit) bytes, too long for a backup password; check that the right file was given."
        case .unsupportedKind(let path, let kind):
            return "the password file \(path) is \(kind); give a regular file, a named pipe or a process substitution such as --password-file <(pass show backup)."
        case .nothingArrived(let path, let seconds, let received):
            return "\(received ? "the password file \(path) was not closed" : "nothing arrived on the password file \(path)") within \(seconds) s; check that the program meant to write the password to it runs and ends (set \(BackupPasswordSource.waitVariable) to wait longer)."
        case .cancelled:
            return "no password was typed (the prompt was cancelled); nothing was decrypted."
        }
    }
}

/// Where an encrypted backup's password comes from. Each source hands back the password as
/// `SecretBytes`, never as a `String`, and is asked only when an encrypted backup is met.
///
/// Order of precedence, chosen by the command line (`InputSettings`): `--password-file`, then
/// `STORELENS_BACKUP_PASSWORD`, then a prompt on the terminal without echo when stdin is one.
/// A password is never accepted as a plain command-line value: it would stay in shell history
/// and be visible to every user in `ps`.
public final class BackupPasswordSource: Sendable {
    public enum Kind: Equatable, Sendable {
        /// A file holding the password; one trailing newline (as `echo` writes it) is dropped.
        case file(String)
        /// An environment variable.
        case environment(String)
        /// The terminal on stdin, echo off.
        case terminal
    }
    public let kind: Kind

    public static let environmentVariable = "STORELENS_BACKUP_PASSWORD"
    /// Longer than any password a person types; bounds what is read from a file or the terminal.
    public static let maxBytes = 4096

    public init(_ kind: Kind) { self.kind = kind }

    /// The source the command line implies: a file given, else the variable when set, else the
    /// terminal when stdin is one; nil when there is none (an encrypted backup is then refused).
    public static func implied(passwordFile: String?) -> BackupPasswordSource? {
        if let passwordFile { return BackupPasswordSource(.file(passwordFile)) }
        if getenv(environmentVariable) != nil { return BackupPasswordSource(.environment(environmentVariable)) }
        if isatty(STDIN_FILENO) == 1 { return BackupPasswordSource(.terminal) }
        return nil
    }

    /// The password, read afresh each time (nothing is kept here); the caller clears it as soon
    /// as the keybag is unlocked. `backup` names the backup in the terminal prompt, so a batch of
    /// encrypted backups read from a terminal asks once for each.
    func password(for backup: String) throws(BackupPasswordError) -> SecretBytes {
        switch kind {
        case .file(let path): return try Self.readFile(path)
        case .environment(let name): return try Self.readEnvironment(name)
        case .terminal: return try Self.readTerminal(prompt: "Password for the encrypted backup \(backup): ")
        }
    }

    // MARK: - Reading without a String

    /// How long a password file that is a pipe may take to deliver the password and close: a
    /// password manager behind `<(pass show backup)` may first ask for its own passphrase.
    public static let defaultWaitSeconds = 30
    public static let waitVariable = "STORELENS_PASSWORD_WAIT_SECONDS"

    /// `STORELENS_PASSWORD_WAIT_SECONDS` when it is a whole number from 1 to 3600, else 30.
    static var waitSeconds: Int {
        guard let text = getenv(waitVariable).map({ String(cString: $0) }), let n = Int(text), (1...3600).contains(n) else {
            return defaultWaitSeconds
        }
        return n
    }

    /// A regular file, a named pipe, or a pipe handed over as `/dev/fd/N` (a shell's process
    /// substitution): read without ever blocking past `waitMilliseconds`, at most `maxBytes` + 2.
    static func readFile(_ path: String, waitMilliseconds: Int = waitSeconds * 1000) throws(BackupPasswordError) -> SecretBytes {
        let fd = try openPasswordFile(path)
        defer { close(fd) }
        let secret = SecretBytes(capacity: maxBytes + 2)
        var used = 0
        let clock = ContinuousClock()
        let deadline = clock.now.advanced(by: .milliseconds(waitMilliseconds))
        enum Stop { case failed(Int32), timedOut }
        let stop: Stop? = secret.withUnsafeMutableBytes { buffer in
            while used < buffer.count {
                // Waits for bytes or the end before each read: a named pipe with no writer yet
                // reads as its end at once, while poll(2) waits for the writer.
                let left = clock.now.duration(to: deadline).components
                let milliseconds = left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000
                guard milliseconds > 0 else { return .timedOut }
                var ready = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
                let polled = poll(&ready, 1, Int32(min(milliseconds, Int64(Int32.max))))
                if polled < 0 { if errno == EINTR { continue }; return .failed(errno) }
                if polled == 0 { return .timedOut }
                let n = read(fd, buffer.baseAddress! + used, buffer.count - used)
                if n < 0 { if errno == EINTR || errno == EAGAIN { continue }; return .failed(errno) }
                if n == 0 { break }
                used += n
            }
            return nil
        }
        secret.setCount(used)
        switch stop {
        case .failed(let code)?:
            secret.clear()
            throw .fileUnreadable(path: path, reason: String(cString: strerror(code)))
        case .timedOut?:
            secret.clear()
            throw .nothingArrived(path: path, seconds: (waitMilliseconds + 999) / 1000, received: used > 0)
        case nil: break
        }
        let source = "the password file \(path)"
        if used > maxBytes + 1 { secret.clear(); throw .tooLong(source: source, limit: maxBytes) }
        dropTrailingNewline(secret)
        if secret.count > maxBytes { secret.clear(); throw .tooLong(source: source, limit: maxBytes) }
        guard secret.count > 0 else { throw .empty(source: source) }
        return secret
    }

    /// Opens `path` for reading without blocking (a named pipe's open waits for a writer
    /// otherwise), after checking what it is: opening a device or a socket may itself act.
    ///
    /// Links are followed (no O_NOFOLLOW): the password file is named by the user, is never
    /// evidence and is never written, and `/dev/fd/N` — how a shell hands over a process
    /// substitution — is a link to the pipe on Linux. What the opened descriptor is (fstat) is
    /// checked again, so a link cannot lead to a device between the two looks.
    static func openPasswordFile(_ path: String) throws(BackupPasswordError) -> Int32 {
        var named = stat()
        guard stat(path, &named) == 0 else { throw .fileUnreadable(path: path, reason: String(cString: strerror(errno))) }
        if let kind = unsupportedKind(named.st_mode) { throw .unsupportedKind(path: path, kind: kind) }
        let fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC)
        guard fd >= 0 else { throw .fileUnreadable(path: path, reason: String(cString: strerror(errno))) }
        var opened = stat()
        guard fstat(fd, &opened) == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw .fileUnreadable(path: path, reason: reason)
        }
        if let kind = unsupportedKind(opened.st_mode) {
            close(fd)
            throw .unsupportedKind(path: path, kind: kind)
        }
        return fd
    }

    /// What a file of `mode` is, when a password cannot be read from it; nil for a regular file
    /// or a pipe.
    static func unsupportedKind(_ mode: mode_t) -> String? {
        switch mode & S_IFMT {
        case S_IFREG, S_IFIFO: return nil
        case S_IFDIR: return "a folder"
        case S_IFCHR: return "a character device"
        case S_IFBLK: return "a block device"
        case S_IFSOCK: return "a socket"
        default: return "not a regular file or a pipe"
        }
    }

    static func readEnvironment(_ name: String) throws(BackupPasswordError) -> SecretBytes {
        // getenv's bytes are copied straight into the secret: no String is made of them.
        guard let value = getenv(name) else { throw .empty(source: "the \(name) variable") }
        let length = strlen(value)
        guard length <= maxBytes else { throw .tooLong(source: "the \(name) variable", limit: maxBytes) }
        guard length > 0 else { throw .empty(source: "the \(name) variable") }
        return SecretBytes(copying: UnsafeRawBufferPointer(start: value, count: length))
    }

    /// Asks on stderr and reads stdin with echo turned off, restoring the terminal afterwards.
    /// Signals from the keyboard are off too while it asks: Ctrl-C arrives as a byte and cancels
    /// here, where the terminal can be restored (the interrupt handler exits at once, and would
    /// leave it without echo).
    static func readTerminal(prompt: String) throws(BackupPasswordError) -> SecretBytes {
        var saved = termios()
        let haveTerminal = tcgetattr(STDIN_FILENO, &saved) == 0
        if haveTerminal {
            var quiet = saved
            // Byte by byte (ICANON off), so Ctrl-C cancels at once; erase keys are handled below.
            quiet.c_lflag &= ~(tcflag_t(ECHO) | tcflag_t(ISIG) | tcflag_t(ICANON))
            withUnsafeMutableBytes(of: &quiet.c_cc) { cc in
                cc[Int(VMIN)] = 1
                cc[Int(VTIME)] = 0
            }
            _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &quiet)
        }
        // Asked only once echo is off: whatever is typed after the prompt appears stays unseen.
        _ = prompt.withCString { write(STDERR_FILENO, $0, strlen($0)) }
        defer {
            if haveTerminal {
                _ = tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
                // The Enter typed was not echoed: end the prompt's line.
                _ = write(STDERR_FILENO, "\n", 1)
            }
        }
        let secret = SecretBytes(capacity: maxBytes + 1)
        var used = 0
        let cancelled: Bool = secret.withUnsafeMutableBytes { buffer in
            var byte: UInt8 = 0
            defer { byte = 0 }
            while used < buffer.count {
                let n = read(STDIN_FILENO, &byte, 1)
                if n < 0 && errno == EINTR { continue }
                if n <= 0 || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r") { break }
                switch byte {
                case 3: return true                       // Ctrl-C
                case 4 where used == 0: return true       // Ctrl-D on an empty line
                case 0x7f, 0x08:                          // erase one character (all its UTF-8 bytes)
                    while used > 0 && buffer[used - 1] & 0xC0 == 0x80 { used -= 1; buffer[used] = 0 }
                    if used > 0 { used -= 1; buffer[used] = 0 }
                case 0x15:                                // Ctrl-U: erase the line
                    for i in 0..<used { buffer[i] = 0 }
                    used = 0
                default:
                    buffer[used] = byte
                    used += 1
                }
            }
            return false
        }
        secret.setCount(used)
        if cancelled { secret.clear(); throw .cancelled }
        if used > maxBytes { secret.clear(); throw .tooLong(source: "the terminal", limit: maxBytes) }
        if secret.count > 0 { dropTrailing(secret, UInt8(ascii: "\r")) }
        guard secret.count > 0 else { throw .empty(source: "the terminal") }
        return secret
    }

    /// Drops one trailing "\n" (or "\r\n"), as `echo pw > file` or a Windows editor leaves.
    static func dropTrailingNewline(_ secret: SecretBytes) {
        guard dropTrailing(secret, UInt8(ascii: "\n")) else { return }
        dropTrailing(secret, UInt8(ascii: "\r"))
    }

    @discardableResult
    private static func dropTrailing(_ secret: SecretBytes, _ byte: UInt8) -> Bool {
        let last = secret.withUnsafeBytes { $0.last }
        guard last == byte else { return false }
        secret.setCount(secret.count - 1)
        return true
    }
}

extension BackupPasswordError: DescribedError {
    public var errorClass: ErrorClass { .input }
}
