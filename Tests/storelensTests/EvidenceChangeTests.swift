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

    /// A WAL-mode store recorded without a `-wal`, whose `-wal` appears before SQLite reads it (a
    /// live app's first write after a checkpoint): the rows only that `-wal` holds were shown as
    /// the evidence. Neither in place (the VFS opens only the sidecars the family recorded) nor
    /// copied may they be; the run ends in exit 3 naming the `-wal`.
    @Test("a -wal that appears after the store was recorded is never read: exit 3 naming it, in place and with --copy")
    func appearedWAL() throws {
        for copy in [false, true] {
            for command in [["inspect"], ["check"], ["recover"], ["rows", "<store>", "Note", "--format", "jsonl"]] {
                let folder = try TemporaryFolder("evidence-appeared")
                let evidence = folder.path("evidence")
                for made in [evidence, folder.path("built")] { try FileManager.default.createDirectory(at: made, withIntermediateDirectories: true) }
                let built = try LaggingKeyStore.withNotesInWAL(in: folder.path("built"))
                let url = evidence.appendingPathComponent("default.store")
                try FileManager.default.copyItem(at: built, to: url)
                let wal = URL(fileURLWithPath: url.path + "-wal")
                var arguments = command.count == 1 ? command + [url.path] : command.map { $0 == "<store>" ? url.path : $0 }
                if copy { arguments.append("--copy") }
                try EvidenceChange.assertCaught(arguments, changed: wal, moment: .beforeAfterHash, what: "a -wal appeared") {
                    try FileManager.default.copyItem(at: URL(fileURLWithPath: built.path + "-wal"), to: wal)
                }
            }
        }
    }

    /// A failure while reading first asks whether the inputs changed: the main file cut in half,
    /// or the `-wal` replaced by another database's, while storelens reads them, is exit 3 naming
    /// the file, never "damaged … copy it off the device again".
    @Test("the main file cut in half, or the -wal replaced by another database's, while storelens reads: exit 3, in place and with --copy")
    func changedUnderTheReader() throws {
        for copy in [false, true] {
            for command in Self.commands {
                for cut in [true, false] {
                    let folder = try TemporaryFolder("evidence-cut")
                    let url = try LaggingKeyStore.withNotesInWAL(in: folder.url)
                    let other = try HostileCorpus.store(in: folder.path("other"), walCommits: 40)
                    var arguments = command.count == 1 ? command + [url.path] : command.map { $0 == "<store>" ? url.path : $0 }
                    if copy { arguments.append("--copy") }
                    let changed = cut ? url : URL(fileURLWithPath: url.path + "-wal")
                    try EvidenceChange.assertCaught(arguments, changed: changed, moment: .beforeAfterHash,
                                                    what: cut ? "the main file cut in half" : "the -wal replaced by another database's") {
                        if cut {
                            let size = try #require(try FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber).int64Value
                            #expect(truncate(url.path, off_t(size / 2)) == 0)
                        } else {
                            let replacement = folder.path("replacement")
                            try FileManager.default.copyItem(at: URL(fileURLWithPath: other.path + "-wal"), to: replacement)
                            #expect(rename(replacement.path, changed.path) == 0)
                        }
                    }
                }
            }
        }
    }
}
