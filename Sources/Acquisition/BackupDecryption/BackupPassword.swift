import Foundation

/// Why no password could be had. Never carries the password or any part of it.
public enum BackupPasswordError: Error, Equatable, Sendable, CustomStringConvertible {
    /// An encrypted backup, and no way to ask for its password.
    case required(backup: String)
    case fileUnreadable(path: String, reason: String)
    case empty(source: String)
    case tooLong(source: String, limit: Int)
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

    static func readFile(_ path: String) throws(BackupPasswordError) -> SecretBytes {
        let fd = open(path, O_RDONLY)
        guard fd >= 0 else { throw .fileUnreadable(path: path, reason: String(cString: strerror(errno))) }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, st.st_mode & S_IFMT == S_IFREG else {
            throw .fileUnreadable(path: path, reason: "not a regular file")
        }
        let secret = SecretBytes(capacity: maxBytes + 2)
        var used = 0
        let failure: Int32? = secret.withUnsafeMutableBytes { buffer in
            while used < buffer.count {
                let n = read(fd, buffer.baseAddress! + used, buffer.count - used)
                if n < 0 { if errno == EINTR { continue }; return errno }
                if n == 0 { break }
                used += n
            }
            return nil
        }
        if let failure { throw .fileUnreadable(path: path, reason: String(cString: strerror(failure))) }
        secret.setCount(used)
        let source = "the password file \(path)"
        if used > maxBytes + 1 { secret.clear(); throw .tooLong(source: source, limit: maxBytes) }
        dropTrailingNewline(secret)
        if secret.count > maxBytes { secret.clear(); throw .tooLong(source: source, limit: maxBytes) }
        guard secret.count > 0 else { throw .empty(source: source) }
        return secret
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
