import Foundation
import StoreBuilder
import StoreTestSupport
import Testing

/// Every command reads each evidence byte at most twice: the hash is taken from the
/// bytes as they are copied, and the after-hash runs on a background thread beside the command's
/// work. Neither may let a change to an input go unnoticed: one made before the after-hash
/// changes the bytes it reads, one made after it changes the file's ctime, which the closing
/// identity check compares.
@Suite("an input changed during a run is caught, before or after its after-hash")
struct EvidenceChangeTests {
    static let commands: [[String]] = [["inspect"], ["rows", "<store>", "Note", "--format", "jsonl"], ["wal"], ["check"]]

    @Test("inspect, rows, wal and check exit 3 naming the changed file, whatever the moment and the change",
          arguments: EvidenceChange.Moment.allCases, EvidenceChange.Change.allCases)
    func caught(moment: EvidenceChange.Moment, change: EvidenceChange.Change) throws {
        for command in Self.commands {
            let folder = try TemporaryFolder("evidence-change")
            let url = try LaggingKeyStore.withNotesInWAL(in: folder.url)
            let arguments = command.count == 1 ? command + [url.path] : command.map { $0 == "<store>" ? url.path : $0 }
            try EvidenceChange.assertCaught(arguments, store: url, moment: moment, change: change)
        }
    }
}
