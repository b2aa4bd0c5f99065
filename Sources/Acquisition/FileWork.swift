import Foundation

/// Per-file work (hashing, copying) spread over two threads. A store family is mostly two large
/// files, the main file and its -wal; handling them side by side makes the slower one the whole
/// cost instead of the sum. Results keep the order of `items`; the first error, in that order, is
/// thrown once every item has finished.
enum FileWork {
    static let threads = 2

    static func map<T>(_ items: [URL], _ body: (URL) throws -> T) throws -> [T] {
        try map(items, weights: items.map(size), body)
    }

    /// As `map`, with each item's weight (its bytes) given: the heaviest start first, so the two
    /// threads finish close together.
    static func map<Item, T>(_ items: [Item], weights: [Int64], _ body: (Item) throws -> T) throws -> [T] {
        guard items.count > 1 else { return try items.map(body) }
        let order = items.indices.sorted { weights[$0] > weights[$1] }
        let results = Results<T>(count: items.count)
        withoutActuallyEscaping(body) { body in
            let work = UncheckedBox((body, items))
            DispatchQueue.concurrentPerform(iterations: min(threads, items.count)) { _ in
                while let slot = results.next() {
                    let index = order[slot]
                    results.set(index, Result { try work.value.0(work.value.1[index]) })
                }
            }
        }
        return try results.all()
    }

    static func size(_ url: URL) -> Int64 {
        var st = stat()
        return lstat(url.path, &st) == 0 ? Int64(st.st_size) : 0
    }

    private final class Results<T>: @unchecked Sendable {
        private let lock = NSLock()
        private var taken = 0
        private var values: [Result<T, Error>?]

        init(count: Int) { values = Array(repeating: nil, count: count) }

        func next() -> Int? {
            lock.lock(); defer { lock.unlock() }
            guard taken < values.count else { return nil }
            taken += 1
            return taken - 1
        }

        func set(_ index: Int, _ value: Result<T, Error>) {
            lock.lock(); values[index] = value; lock.unlock()
        }

        func all() throws -> [T] {
            lock.lock(); defer { lock.unlock() }
            return try values.map { try $0!.get() }
        }
    }

    /// Lets a non-Sendable closure run on the two threads; `map` waits for both before returning.
    private struct UncheckedBox<V>: @unchecked Sendable {
        let value: V
        init(_ value: V) { self.value = value }
    }
}
