import SQLiteAccess

/// Many-to-many join tables, found by their column names: each column is named after the
/// relationship pointing at the rows it holds.
extension SchemaMapBuilder {
    /// Where one side of a many-to-many lives: the join table, the column holding this side's
    /// keys, the column holding the other side's, and the order column of an ordered side.
    typealias JoinColumns = (table: String, source: String, destination: String, order: String?)

    /// The join table of every many-to-many, keyed "Entity.relationship" (both sides), and the
    /// tables claimed; a join table's columns that are neither side's nor an order are unknown.
    mutating func mapJoinTables(_ ordered: [ModelEntity], unknownColumns: inout [SchemaMap.UnknownColumn])
        -> (joins: [String: JoinColumns], claimed: Set<String>) {
        let candidates = tables.filter { $0.uppercased().hasPrefix("Z_") && !Self.metadataTables.contains($0.uppercased()) }.sorted()
        var joinColumns: [String: [Connection.Column]] = [:]
        for t in candidates { joinColumns[t] = (try? connection.columns(of: t)) ?? [] }
        var joins: [String: JoinColumns] = [:]
        var claimed = Set<String>()
        func noteUnknown(_ found: JoinColumns) {
            for c in joinColumns[found.table] ?? [] where ![found.source, found.destination].contains(c.name) && !c.name.uppercased().hasPrefix("Z_FOK_") {
                unknownColumns.append(.init(table: found.table, column: c.name, declaredType: c.declaredType))
            }
        }
        for e in ordered {
            for r in e.relationships where !r.isTransient && r.isToMany {
                guard let inverse = model.inverse(of: r), inverse.isToMany else { continue }
                let key = "\(e.name).\(r.name)"
                if joins[key] != nil { continue }
                let inverseOwner = model.lineage(of: r.destination).last { $0.relationships.contains { $0.name == inverse.name } }?.name ?? r.destination
                let eNumber = userNumber(e.name).map(String.init) ?? ""
                let dNumber = userNumber(inverseOwner).map(String.init) ?? ""
                let available = candidates.filter { !claimed.contains($0) }
                if inverseOwner == e.name && inverse.name == r.name {
                    guard let found = Self.reflexiveJoin(base: "Z_\(eNumber)" + r.name.uppercased(), in: available, columns: joinColumns) else {
                        problems.append("no join table holds the reflexive many-to-many \(e.name).\(r.name) (its own inverse)")
                        continue
                    }
                    claimed.insert(found.table)
                    joins[key] = found
                    noteUnknown(found)
                    continue
                }
                guard let found = Self.join(sourceBase: "Z_\(eNumber)" + inverse.name.uppercased(),
                                            destinationBase: "Z_\(dNumber)" + r.name.uppercased(), in: available, columns: joinColumns) else {
                    problems.append("no join table holds the many-to-many \(e.name).\(r.name) ↔ \(inverseOwner).\(inverse.name)")
                    continue
                }
                claimed.insert(found.table)
                joins[key] = found
                let inverseOrder = joinColumns[found.table]?.map(\.name)
                    .first { $0.uppercased() == "Z_FOK_" + found.source.uppercased().dropFirst(2) }
                joins["\(inverseOwner).\(inverse.name)"] = (found.table, found.destination, found.source, inverseOrder)
                noteUnknown(found)
            }
        }
        return (joins, claimed)
    }

    /// The first table among `tables` with a column for each side (the best suffix match).
    static func join(sourceBase: String, destinationBase: String, in tables: [String], columns: [String: [Connection.Column]]) -> JoinColumns? {
        for t in tables {
            let names = (columns[t] ?? []).map(\.name)
            func pick(_ base: String, excluding: String?) -> String? {
                names.filter { $0 != excluding }
                    .compactMap { n in suffixScore(n.uppercased(), base: base).map { (n, $0) } }
                    .min { $0.1 < $1.1 }?.0
            }
            guard let source = pick(sourceBase, excluding: nil),
                  let destination = pick(destinationBase, excluding: source) else { continue }
            let order = names.first { $0.uppercased() == "Z_FOK_" + destination.uppercased().dropFirst(2) }
                ?? names.first { $0.uppercased().hasPrefix("Z_FOK_") }
            return (t, source, destination, order)
        }
        return nil
    }

    /// A relationship that is its own inverse (Photos' Person.mergeCandidates) keeps one join
    /// table `Z_<n><NAME>` whose columns are `Z_<n><NAME>` and `REFLEXIVE`.
    static func reflexiveJoin(base: String, in tables: [String], columns: [String: [Connection.Column]]) -> JoinColumns? {
        tables.lazy.compactMap { t -> JoinColumns? in
            let names = (columns[t] ?? []).map(\.name)
            guard let reflexive = names.first(where: { $0.uppercased() == "REFLEXIVE" }),
                  let source = names.filter({ $0 != reflexive })
                    .compactMap({ n in suffixScore(n.uppercased(), base: base).map { (n, $0) } })
                    .min(by: { $0.1 < $1.1 })?.0 else { return nil }
            return (t, source, reflexive, names.first { $0.uppercased().hasPrefix("Z_FOK_") })
        }.first
    }
}
