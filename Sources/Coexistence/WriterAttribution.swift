import CoreDataStore

/// Decides which stack wrote a history transaction, from its author, context name, process name
/// and bundle id. Several stacks of one app often share a bundle id (coexistence in one process),
/// so the more specific values weigh more: author 8, context name 4, process name 2, bundle id 1.
/// The stack with the highest score claims the transaction; a tie claims nothing.
struct WriterAttribution {
    let stacks: [Manifest.Stack]

    enum Verdict: Equatable {
        case stack(String)
        case unclaimed
        case ambiguous([String])
    }

    func attribute(author: String?, bundleID: String?, processName: String?, contextName: String?) -> Verdict {
        var scores: [(String, Int)] = []
        for stack in stacks where !stack.writers.isEmpty {
            var score = 0
            if let author, stack.writers.authors.contains(author) { score += 8 }
            if let contextName, stack.writers.contextNames.contains(contextName) { score += 4 }
            if let processName, stack.writers.processNames.contains(processName) { score += 2 }
            if let bundleID, stack.writers.bundleIDs.contains(bundleID) { score += 1 }
            if score > 0 { scores.append((stack.name, score)) }
        }
        guard let best = scores.map(\.1).max() else { return .unclaimed }
        let winners = scores.filter { $0.1 == best }.map(\.0)
        return winners.count == 1 ? .stack(winners[0]) : .ambiguous(winners)
    }

    func attribute(_ t: HistoryTransaction) -> Verdict {
        attribute(author: t.author, bundleID: t.bundleID, processName: t.processName, contextName: t.contextName)
    }
}
