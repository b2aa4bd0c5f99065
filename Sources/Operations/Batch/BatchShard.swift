import Foundation
import StoreFormats

/// One share of a batch spread over N processes or machines (`--shard K/N`, docs/scale-out.md).
///
/// An input belongs to shard K (1 … N) when the first 8 bytes of the SHA-256 of its path, read as
/// a big-endian number, leave K − 1 when divided by N. SHA-256 and not Swift's `Hasher`: `Hasher`
/// is seeded afresh in every process, and every machine of a batch must split the inputs alike.
/// The split is reproducible in a shell: `printf %s PATH | sha256sum | cut -c1-16`.
public struct BatchShard: Sendable, Equatable, CustomStringConvertible {
    /// 1 … count.
    public let index: Int
    public let count: Int

    /// More shards than this is a typo, not a cluster (Kubernetes allows 100,000 completions).
    public static let maximumCount = 100_000

    public init(index: Int, count: Int) throws(BatchShardError) {
        guard count >= 1, count <= Self.maximumCount else {
            throw BatchShardError("the shard count \(count) is out of range; give N from 1 to \(Self.maximumCount) in --shard K/N")
        }
        guard index >= 1, index <= count else {
            throw BatchShardError("shard \(index) does not exist in \(plural(count, "shard")); give K from 1 to \(count) in --shard K/N")
        }
        self.index = index
        self.count = count
    }

    public var description: String { "\(index)/\(count)" }

    /// The 0-based slot (0 … count − 1) an input path falls in.
    public static func slot(of input: String, count: Int) -> Int {
        let digest = SHA256.hex(Data(input.utf8))
        let value = UInt64(digest.prefix(16), radix: 16) ?? 0
        return Int(value % UInt64(max(1, count)))
    }

    public func contains(_ input: String) -> Bool { Self.slot(of: input, count: count) == index - 1 }

    /// The inputs of this shard, in the order given.
    public func select(_ inputs: [String]) -> [String] { inputs.filter(contains) }

    /// `K/N`, or `auto`: the shard a job scheduler gives this process through its environment
    /// (a Kubernetes Indexed Job or a Slurm job array).
    public static func parse(_ text: String, environment: [String: String]) throws(BatchShardError) -> BatchShard {
        if text == "auto" { return try fromEnvironment(environment) }
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 2, let k = Int(parts[0]), let n = Int(parts[1]) else {
            throw BatchShardError("the value '\(text)' is invalid for '--shard'; give K/N (shard K of N, counted from 1, e.g. 2/8) or auto")
        }
        return try BatchShard(index: k, count: n)
    }

    /// Kubernetes sets `JOB_COMPLETION_INDEX` (0-based) in each pod of an Indexed Job but no count:
    /// the manifest passes `spec.completions` as `JOB_COMPLETION_COUNT`. Slurm sets
    /// `SLURM_ARRAY_TASK_ID`, `SLURM_ARRAY_TASK_COUNT` and the array's `SLURM_ARRAY_TASK_MIN`
    /// (`--array=1-8` starts at 1) and `SLURM_ARRAY_TASK_STEP`.
    static func fromEnvironment(_ env: [String: String]) throws(BatchShardError) -> BatchShard {
        func number(_ name: String) throws(BatchShardError) -> Int? {
            guard let text = env[name]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
            guard let value = Int(text), value >= 0 else {
                throw BatchShardError("\(name) is '\(text)', not a whole number; --shard auto cannot tell this process's shard")
            }
            return value
        }
        if let index = try number("JOB_COMPLETION_INDEX") {
            guard let count = try number("JOB_COMPLETION_COUNT") else {
                throw BatchShardError("--shard auto found JOB_COMPLETION_INDEX but no JOB_COMPLETION_COUNT; set it to the Job's completions in the manifest (docs/scale-out.md)")
            }
            return try checked(index: index, count: count, source: "JOB_COMPLETION_INDEX=\(index), JOB_COMPLETION_COUNT=\(count)")
        }
        if let id = try number("SLURM_ARRAY_TASK_ID") {
            guard let count = try number("SLURM_ARRAY_TASK_COUNT") else {
                throw BatchShardError("--shard auto found SLURM_ARRAY_TASK_ID but no SLURM_ARRAY_TASK_COUNT; run it as a Slurm job array (sbatch --array)")
            }
            let first = try number("SLURM_ARRAY_TASK_MIN") ?? 0
            let step = max(1, try number("SLURM_ARRAY_TASK_STEP") ?? 1)
            let source = "SLURM_ARRAY_TASK_ID=\(id), SLURM_ARRAY_TASK_MIN=\(first), SLURM_ARRAY_TASK_COUNT=\(count)"
            guard id >= first, (id - first) % step == 0 else {
                throw BatchShardError("--shard auto cannot place task \(id) in its array (\(source)); use a contiguous --array such as 0-\(count - 1)")
            }
            return try checked(index: (id - first) / step, count: count, source: source)
        }
        throw BatchShardError("--shard auto found neither JOB_COMPLETION_INDEX (Kubernetes Indexed Job) nor SLURM_ARRAY_TASK_ID (Slurm job array); give --shard K/N")
    }

    private static func checked(index: Int, count: Int, source: String) throws(BatchShardError) -> BatchShard {
        guard count >= 1, count <= maximumCount, index < count else {
            throw BatchShardError("--shard auto read \(source), which is no shard of \(count); the index must be below the count (docs/scale-out.md)")
        }
        return try BatchShard(index: index + 1, count: count)
    }
}

/// A `--shard` value that names no shard: one sentence saying what to give instead.
public struct BatchShardError: Error, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description.prefix(1).uppercased() + description.dropFirst() + "." }
}
