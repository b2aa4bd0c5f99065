import CZlib
import Foundation

/// Raw DEFLATE (RFC 1951: no zlib header, no checksum) through the system zlib.
///
/// Core Data stores `Z_MODELCACHE.Z_CONTENT` this way (Apple's
/// `NSData.compressed(using: .zlib)`), and Linux Foundation has no
/// compression API, so the project calls zlib with windowBits −15. Inflation
/// takes an output cap because the blobs come from untrusted devices: a few
/// kilobytes of DEFLATE can expand to gigabytes.
public enum RawDeflate {
    /// The windowBits value that selects raw DEFLATE with a 32 KB window.
    static let rawWindowBits: Int32 = -15
    /// Output is produced in chunks of this size, so memory grows with actual output only.
    static let chunkSize = 64 * 1024

    /// Hands zlib the next piece of `input` once it has used the last: zlib counts input in 32-bit
    /// units, so larger inputs go in piecewise.
    static func feed(_ stream: inout z_stream, from input: UnsafeBufferPointer<UInt8>, consumed: inout Int) {
        guard stream.avail_in == 0, consumed < input.count, let base = input.baseAddress else { return }
        let piece = min(input.count - consumed, Int(UInt32.max))
        stream.next_in = UnsafeMutablePointer(mutating: base + consumed)
        stream.avail_in = uInt(piece)
        consumed += piece
    }

    /// Decompresses a complete raw DEFLATE stream.
    ///
    /// Throws `.outputLimitExceeded` as soon as the output would exceed
    /// `maxOutputBytes`, `.truncated` when the input ends before the final
    /// block, `.corrupt` for invalid data and `.trailingData` when bytes follow
    /// the end of the stream.
    public static func inflate(_ data: Data, maxOutputBytes: Int) throws(RawDeflateError) -> Data {
        guard maxOutputBytes >= 0 else { throw .invalidArgument("maxOutputBytes must not be negative") }
        var stream = z_stream()
        let initStatus = storelens_inflateInit2(&stream, rawWindowBits)
        guard initStatus == Z_OK else { throw .zlib(code: initStatus, message: message(of: stream)) }
        defer { inflateEnd(&stream) }

        var output = Data()
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        let input = [UInt8](data)
        let result: Result<Data, RawDeflateError> = input.withUnsafeBufferPointer { inputBuffer in
            var consumed = 0
            while true {
                feed(&stream, from: inputBuffer, consumed: &consumed)
                let status: Int32 = chunk.withUnsafeMutableBufferPointer { outputBuffer in
                    stream.next_out = outputBuffer.baseAddress
                    stream.avail_out = uInt(outputBuffer.count)
                    return zlibInflate(&stream, Z_NO_FLUSH)
                }
                let produced = chunkSize - Int(stream.avail_out)
                if produced > maxOutputBytes - output.count {
                    return .failure(.outputLimitExceeded(limit: maxOutputBytes))
                }
                output.append(contentsOf: chunk[0..<produced])
                switch status {
                case Z_STREAM_END:
                    let remaining = Int(stream.avail_in) + (inputBuffer.count - consumed)
                    if remaining > 0 { return .failure(.trailingData(byteCount: remaining)) }
                    return .success(output)
                case Z_OK:
                    continue
                case Z_BUF_ERROR:
                    // No progress was possible: with a fresh output buffer that means the input ran out.
                    if stream.avail_in == 0, consumed < inputBuffer.count { continue }
                    return .failure(.truncated)
                case Z_DATA_ERROR, Z_NEED_DICT:
                    return .failure(.corrupt(message(of: stream)))
                default:
                    return .failure(.zlib(code: status, message: message(of: stream)))
                }
            }
        }
        return try result.get()
    }

    /// Compresses `data` as one raw DEFLATE stream (levels 0–9, or −1 for zlib's default).
    public static func deflate(_ data: Data, level: Int32 = 6) throws(RawDeflateError) -> Data {
        guard (-1...9).contains(level) else { throw .invalidArgument("level must be between -1 and 9") }
        var stream = z_stream()
        let initStatus = storelens_deflateInit2(&stream, level, rawWindowBits)
        guard initStatus == Z_OK else { throw .zlib(code: initStatus, message: message(of: stream)) }
        defer { deflateEnd(&stream) }

        var output = Data()
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        let input = [UInt8](data)
        let result: Result<Data, RawDeflateError> = input.withUnsafeBufferPointer { inputBuffer in
            var consumed = 0
            while true {
                feed(&stream, from: inputBuffer, consumed: &consumed)
                let flush = consumed == inputBuffer.count ? Z_FINISH : Z_NO_FLUSH
                let status: Int32 = chunk.withUnsafeMutableBufferPointer { outputBuffer in
                    stream.next_out = outputBuffer.baseAddress
                    stream.avail_out = uInt(outputBuffer.count)
                    return zlibDeflate(&stream, flush)
                }
                output.append(contentsOf: chunk[0..<(chunkSize - Int(stream.avail_out))])
                switch status {
                case Z_STREAM_END: return .success(output)
                case Z_OK, Z_BUF_ERROR: continue
                default: return .failure(.zlib(code: status, message: message(of: stream)))
                }
            }
        }
        return try result.get()
    }

    private static func message(of stream: z_stream) -> String? {
        stream.msg.map { String(cString: $0) }
    }
}

// File-level wrappers: inside `RawDeflate`, the names `inflate`/`deflate` mean the static methods.
private func zlibInflate(_ stream: UnsafeMutablePointer<z_stream>, _ flush: Int32) -> Int32 {
    inflate(stream, flush)
}

private func zlibDeflate(_ stream: UnsafeMutablePointer<z_stream>, _ flush: Int32) -> Int32 {
    deflate(stream, flush)
}

/// Why raw DEFLATE data could not be processed.
public enum RawDeflateError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Decompressing would produce more than `limit` bytes.
    case outputLimitExceeded(limit: Int)
    /// The stream ended before its final block.
    case truncated
    /// The data is not valid raw DEFLATE (zlib's message, if any).
    case corrupt(String?)
    /// `byteCount` bytes follow the end of the DEFLATE stream.
    case trailingData(byteCount: Int)
    /// An argument is outside its allowed range.
    case invalidArgument(String)
    /// zlib reported an unexpected status (such as running out of memory).
    case zlib(code: Int32, message: String?)

    public var description: String {
        switch self {
        case .outputLimitExceeded(let limit):
            return "The decompressed data would exceed the limit of \(limit) bytes."
        case .truncated:
            return "The DEFLATE stream is truncated."
        case .corrupt(let message):
            return "The DEFLATE stream is corrupt" + (message.map { " (\($0))." } ?? ".")
        case .trailingData(let count):
            return "\(count) bytes follow the end of the DEFLATE stream."
        case .invalidArgument(let message):
            return "Invalid argument: \(message)."
        case .zlib(let code, let message):
            return "zlib failed with status \(code)" + (message.map { " (\($0))." } ?? ".")
        }
    }
}
