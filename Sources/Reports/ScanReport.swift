import Acquisition
import CoreDataStore
import Foundation
import Operations
import StoreFormats

/// The views of `scan`.
public enum ScanReport: DocumentView {
    public typealias Subject = Storelens.ScanResult

    /// Version of the JSON layout; bumped only on incompatible changes.
    public static let schemaVersion = 1

    /// Version of `--evidence`'s JSON layout.
    public static let evidenceSchemaVersion = 1

    public static func json(inventories: [Inventory], stores: [ScannedStore]) -> JSONValue {
        JSONDocument.make(schemaVersion: schemaVersion, [
            ("inputs", .array(inventories.map { inv in
                .object([
                    ("input", .string(inv.input)),
                    ("kind", .string(inv.kind.rawValue)),
                    ("sha256", .optional(inv.inputSHA256)),
                    ("symlinkTarget", .optional(inv.linkTarget)),
                    ("warnings", .array(inv.warnings.map(JSONValue.string))),
                    ("damage", .optional(inv.damage)),
                ])
            })),
            ("stores", .array(stores.map(json(store:)))),
            ("orphans", .array(inventories.flatMap(\.orphans).map {
                .object([("path", .string($0.path)), ("kind", .string($0.kind)), ("size", .int($0.size))])
            })),
            ("skipped", .array(inventories.flatMap(\.skipped).map {
                .object([("path", .string($0.path)), ("reason", .string($0.reason))])
            })),
        ])
    }

    static func json(store s: ScannedStore) -> JSONValue {
        let f = s.found
        return .object([
            ("path", .string(f.path)),
            ("container", f.container.map { c in
                .object([("kind", .string(c.kind.rawValue)), ("identifier", .optional(c.identifier)),
                         ("source", .string(c.source)), ("root", .string(c.root))])
            } ?? .null),
            ("location", .optional(f.location)),
            ("size", .int(f.size)),
            ("sidecars", .object([
                ("wal", .optional(f.sidecars.wal)),
                ("shm", .optional(f.sidecars.shm)),
                ("journal", .optional(f.sidecars.journal)),
                ("externalData", .optional(f.sidecars.externalData)),
                ("externalDataFiles", .int(f.sidecars.externalDataFiles)),
            ])),
            ("sha256", .object(f.sha256.sorted { $0.key < $1.key }.map { ($0.key, .string($0.value)) })),
            ("format", .optional(s.formatName)),
            ("stack", .optional(s.stack?.rawValue)),
            ("problem", .optional(s.problem)),
            ("externalData", s.externalData.map(InspectionReport.json) ?? .null),
        ])
    }

    /// The sidecar label of a store's external data: the files that came, and the references
    /// whose file did not (`external(3, 1 missing)`); nil when it has none.
    static func externalLabel(_ s: ScannedStore) -> String? {
        if let x = s.externalData, x.folderKind != .missing || x.references > 0 {
            return "external(\(x.files)" + (x.missingReferences > 0 ? ", \(x.missingReferences) missing" : "") + ")"
        }
        return s.found.sidecars.externalData != nil ? "external(\(s.found.sidecars.externalDataFiles))" : nil
    }

    public static func text(inventories: [Inventory], stores: [ScannedStore]) -> String {
        var out = ""
        for inv in inventories {
            out += "\(TextTable.sanitized(inv.input)) (\(inv.kind.rawValue))\n"
            if let target = inv.linkTarget {
                out += "  a symbolic link to \(TextTable.sanitized(target)), followed because it was given on the command line\n"
            }
        }
        out += "\n"
        if stores.isEmpty {
            out += "  no stores found (neither SQLite nor Core Data XML or binary)\n"
        } else {
            var table: [[String]] = [["STORE", "FORMAT", "STACK", "SIZE", "SIDECARS", "CONTAINER"]]
            for s in stores {
                let f = s.found
                var sidecars = [f.sidecars.wal.map { _ in "wal" }, f.sidecars.shm.map { _ in "shm" }, f.sidecars.journal.map { _ in "journal" }].compactMap { $0 }
                if let external = externalLabel(s) { sidecars.append(external) }
                table.append([f.path, s.formatName ?? "?", s.stack?.rawValue ?? "-", String(f.size),
                              sidecars.isEmpty ? "-" : sidecars.joined(separator: ","),
                              f.container.map { $0.identifier ?? $0.kind.rawValue } ?? "-"])
            }
            out += TextTable.render(table, rightAligned: [3], indent: 2)
            for s in stores {
                if let location = s.found.location { out += "  \(TextTable.sanitized(s.found.path)): \(location)\n" }
                if s.found.format != .sqlite, s.problem == nil {
                    out += "  \(TextTable.sanitized(s.found.path)): a \(s.found.format.title) (one file, no -wal; read by inspect, rows and export)\n"
                }
                if let problem = s.problem { out += "  \(TextTable.sanitized(s.found.path)): \(problem)\n" }
            }
        }
        let orphans = inventories.flatMap(\.orphans)
        if !orphans.isEmpty {
            out += "\n  orphan sidecars (their database is missing):\n"
            for o in orphans { out += "    \(TextTable.sanitized(o.path)) (\(o.kind), \(o.size) bytes)\n" }
        }
        let skipped = inventories.flatMap(\.skipped)
        if !skipped.isEmpty {
            out += "\n  skipped:\n"
            for s in skipped.prefix(50) { out += "    \(TextTable.sanitized(s.path)): \(s.reason)\n" }
            if skipped.count > 50 { out += "    … and \(skipped.count - 50) more (see --format json)\n" }
        }
        for inv in inventories {
            for w in inv.warnings { out += "  warning: \(TextTable.sanitized(w))\n" }
        }
        return out
    }

    /// The evidence manifest (`--evidence FILE`): the inputs' hashes and every file extracted.
    public static func evidence(inventories: [Inventory], ledger: EvidenceLedger) -> JSONValue {
        JSONDocument.make(schemaVersion: evidenceSchemaVersion, [
            ("tool", .string("storelens")),
            ("inputs", .array(inventories.map { inv in
                .object([("input", .string(inv.input)), ("kind", .string(inv.kind.rawValue)), ("sha256", .optional(inv.inputSHA256)),
                         ("symlinkTarget", .optional(inv.linkTarget)),
                         ("extracted", .array(inv.extracted.map { .object([("path", .string($0.path)), ("sha256", .string($0.sha256))]) })),
                         // An encrypted backup: each decrypted file tied to its encrypted original by both hashes.
                         ("encrypted", .bool(inv.encrypted)),
                         ("decrypted", .array(inv.decrypted.map {
                             .object([("path", .string($0.path)), ("original", .string($0.original)), ("size", .int(Int($0.size))),
                                      ("encryptedSHA256", .string($0.encryptedSHA256)), ("plaintextSHA256", .string($0.plaintextSHA256))])
                         }))])
            })),
            ("originals", .array(ledger.entries.map {
                .object([("path", .string($0.path)), ("size", .int($0.size)), ("sha256", .optional($0.sha256))])
            })),
        ])
    }
}

extension ScanReport {
    public static func json(_ result: Storelens.ScanResult) -> JSONValue { json(inventories: result.inventories, stores: result.stores) }
    public static func text(_ result: Storelens.ScanResult) -> String { text(inventories: result.inventories, stores: result.stores) }
    public static func markdown(_ result: Storelens.ScanResult) -> String { markdown(inventories: result.inventories, stores: result.stores) }
}
