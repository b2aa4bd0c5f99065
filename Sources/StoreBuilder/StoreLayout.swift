import Foundation
import SQLiteAccess

/// Where Core Data puts a model's entities and properties in SQLite: entity numbers, tables,
/// columns (with their collision suffixes), foreign keys, join tables and indexes, and the
/// exact DDL text Core Data writes. Rules and evidence: coredata-sqlite-format.md §2–§4.
public struct StoreLayout: Sendable {
    public struct Entity: Sendable {
        public let description: EntityDescription
        /// `Z_ENT`.
        public let number: Int
        public let superNumber: Int
        public let rootName: String
        public let table: String
        /// Ancestors first, ending with this entity.
        public let lineage: [String]
    }

    /// A column of an entity table and what it holds.
    public struct Column: Sendable, Equatable {
        public enum Role: Sendable, Equatable {
            case attribute(entity: String, name: String)
            /// A to-one relationship's foreign key (or the hidden key of a to-many without inverse).
            case foreignKey(entity: String, relationship: String)
            /// The destination row's Z_ENT, when the destination has subentities.
            case foreignEntityKey(entity: String, relationship: String)
            /// The order key of an ordered to-many, kept beside the inverse's foreign key.
            case foreignOrderKey(entity: String, relationship: String)
        }
        public let name: String
        public let sqlType: String
        public let role: Role
        /// A column-level `UNIQUE`: how framework 851 stores a one-property uniqueness constraint.
        public var isUnique = false
    }

    public struct Table: Sendable {
        public let name: String
        public let rootEntity: String
        public let columns: [Column]
        public let hasSubentities: Bool
    }

    /// A many-to-many join table: `Z_<n><REL>` with one column per side.
    public struct JoinTable: Sendable {
        public let name: String
        /// Holds primary keys of `firstEntity`; named after the relationship pointing to it.
        public let firstColumn: String
        public let firstEntity: String
        public let secondColumn: String
        public let secondEntity: String
        /// The relationship of `firstEntity` that this table stores (pointing to `secondEntity`).
        public let relationship: String
        public let inverse: String
        public let orderColumn: String?
    }

    public let model: ModelDescription
    /// The NSPersistenceFrameworkVersion whose layout is written (some details changed over time).
    public let frameworkVersion: Int
    public let entities: [Entity]
    public let tables: [Table]
    public let joinTables: [JoinTable]

    public enum LayoutError: Error, CustomStringConvertible {
        case unknownEntity(String)
        case unknownParent(entity: String, parent: String)
        public var description: String {
            switch self {
            case .unknownEntity(let name): return "the model names an entity \(name) that it does not define"
            case .unknownParent(let entity, let parent): return "entity \(entity) names an unknown parent \(parent)"
            }
        }
    }

    public init(model: ModelDescription, frameworkVersion: Int = 1345) throws {
        self.model = model
        self.frameworkVersion = frameworkVersion
        let byName = Dictionary(model.entities.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        for e in model.entities {
            if let p = e.parent, byName[p] == nil { throw LayoutError.unknownParent(entity: e.name, parent: p) }
            for r in e.relationships where byName[r.destination] == nil { throw LayoutError.unknownEntity(r.destination) }
        }
        let ordered = Self.numberedEntities(model)
        self.entities = ordered
        self.tables = Self.entityTables(ordered, model: model, frameworkVersion: frameworkVersion)
        self.joinTables = Self.joinTables(ordered, byName: byName)
    }

    public func entity(_ name: String) -> Entity? { entities.first { $0.description.name == name } }
    public func table(for entity: String) -> Table? {
        guard let e = self.entity(entity) else { return nil }
        return tables.first { $0.name == e.table }
    }

    /// The column holding `property` of `entity` (attribute or to-one foreign key).
    public func column(entity: String, property: String) -> String? {
        guard let table = table(for: entity), let e = self.entity(entity) else { return nil }
        return table.columns.first {
            switch $0.role {
            case .attribute(let owner, let name): return name == property && e.lineage.contains(owner)
            case .foreignKey(let owner, let name): return name == property && e.lineage.contains(owner)
            default: return false
            }
        }?.name
    }

    public func foreignEntityKeyColumn(entity: String, relationship: String) -> String? {
        guard let table = table(for: entity), let e = self.entity(entity) else { return nil }
        return table.columns.first {
            if case .foreignEntityKey(let owner, let name) = $0.role { return name == relationship && e.lineage.contains(owner) }
            return false
        }?.name
    }

    // MARK: - DDL, exactly as Core Data writes it

    /// Entity and join tables, then their indexes, in the order Core Data creates them.
    public var entityDDL: [String] {
        var statements: [String] = []
        for t in tables {
            // Core Data writes names bare; a name no Xcode model allows (a hostile store's) is quoted.
            let name = t.name.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_") } ? t.name : Identifier.quoted(t.name)
            statements.append("CREATE TABLE \(name) ( " + t.columns.map { "\($0.name) \($0.sqlType)\($0.isUnique ? " UNIQUE" : "")" }.joined(separator: ", ") + " )")
        }
        for j in joinTables {
            var cols = "\(j.firstColumn) INTEGER, \(j.secondColumn) INTEGER"
            if let o = j.orderColumn { cols += ", \(o) INTEGER" }
            statements.append("CREATE TABLE \(j.name) ( \(cols), PRIMARY KEY (\(j.firstColumn), \(j.secondColumn)) )")
        }
        statements.append(contentsOf: indexDDL)
        return statements
    }

    /// Foreign-key, Z_ENT, uniqueness and fetch indexes, table by table.
    public var indexDDL: [String] {
        var statements: [String] = []
        for t in tables {
            var forTable: [String] = []
            if t.hasSubentities {
                forTable.append("CREATE INDEX \(t.name)_Z_ENT_INDEX ON \(t.name) (Z_ENT)")
            }
            for c in t.columns {
                if case .foreignKey = c.role {
                    forTable.append("CREATE INDEX \(t.name)_\(c.name)_INDEX ON \(t.name) (\(c.name))")
                } else if case .attribute(let entity, let name) = c.role,
                          entities.first(where: { $0.description.name == entity })?.description.attributes.first(where: { $0.name == name })?.isIndexed == true {
                    forTable.append("CREATE INDEX \(t.name)_\(c.name)_INDEX ON \(t.name) (\(c.name))")
                }
            }
            for e in entities where e.table == t.name {
                for constraint in e.description.uniqueConstraints
                    where frameworkVersion >= FrameworkVersion.uniquenessIndexes || constraint.count != 1 {
                    let cols = constraint.compactMap { column(entity: e.description.name, property: $0) }
                    forTable.append("CREATE UNIQUE INDEX Z_\(e.description.name)_UNIQUE_\(constraint.joined(separator: "_")) ON \(t.name) ("
                                    + cols.map { "\($0) COLLATE BINARY ASC" }.joined(separator: ", ") + ")")
                }
                // A name given twice is one index (photoanalysisd's cache lists Moment.identifier twice; its store has one).
                var seenIndexes = Set<String>()
                for index in e.description.fetchIndexes where !index.isRTree && seenIndexes.insert(index.name).inserted {
                    let cols = zip(index.properties, index.ascending).compactMap { property, ascending in
                        column(entity: e.description.name, property: property).map { "\($0) COLLATE BINARY \(ascending ? "ASC" : "DESC")" }
                    }
                    // An index on a to-many relationship alone has no column, and one on a single
                    // to-one repeats its foreign-key index: Core Data creates neither (Photos'
                    // AlbumList.byAlbumsIndex and LegacyFace.byAssetIndex, Screen Time's Usage.byUser).
                    guard !cols.isEmpty else { continue }
                    if index.properties.count == 1, e.description.relationships.contains(where: { $0.name == index.properties[0] && !$0.isToMany })
                        || model.entities.contains(where: { m in e.lineage.contains(m.name) && m.relationships.contains { $0.name == index.properties[0] && !$0.isToMany } }) {
                        continue
                    }
                    forTable.append("CREATE INDEX Z_\(e.description.name)_\(index.name) ON \(t.name) (" + cols.joined(separator: ", ") + ")")
                }
            }
            statements.append(contentsOf: forTable)
        }
        for j in joinTables {
            statements.append("CREATE INDEX \(j.name)_\(j.secondColumn)_INDEX ON \(j.name) (\(j.secondColumn), \(j.firstColumn))")
        }
        statements.append(contentsOf: rtreeDDL)
        statements.append(contentsOf: derivedAttributeDDL)
        return statements
    }

    /// R-tree fetch indexes: the virtual table and the three triggers that keep it, in the form
    /// Photos.sqlite (macOS 10.15.7) shows.
    public var rtreeDDL: [String] {
        var statements: [String] = []
        for e in entities {
            for index in e.description.fetchIndexes where index.isRTree {
                let name = "Z_RT_\(e.description.name)_\(index.name)"
                let cols = index.properties.compactMap { column(entity: e.description.name, property: $0) }
                let boxes = cols.flatMap { ["\($0)_MIN", "\($0)_MAX"] }
                let values = cols.flatMap { ["NEW.\($0)", "NEW.\($0)"] }.joined(separator: ", ")
                let insert = "INSERT OR REPLACE INTO \(name) (Z_PK, \(boxes.joined(separator: ", "))) VALUES (NEW.Z_PK, \(values))"
                statements.append("CREATE VIRTUAL TABLE \(name) USING RTREE (Z_PK INTEGER PRIMARY KEY, "
                                  + boxes.map { "\($0) FLOAT" }.joined(separator: ", ") + ")")
                statements.append("CREATE TRIGGER \(name)_INSERT AFTER INSERT ON \(e.table) FOR EACH ROW BEGIN \(insert) ; END")
                // The update trigger re-inserts with a plain INSERT (the row was just deleted).
                let reinsert = "INSERT INTO \(name) (Z_PK, \(boxes.joined(separator: ", "))) VALUES (NEW.Z_PK, \(values))"
                statements.append("CREATE TRIGGER \(name)_UPDATE AFTER UPDATE ON \(e.table) FOR EACH ROW BEGIN DELETE FROM \(name) WHERE Z_PK = NEW.Z_PK ; \(reinsert) ; END")
                statements.append("CREATE TRIGGER \(name)_DELETE AFTER DELETE ON \(e.table) FOR EACH ROW BEGIN DELETE FROM \(name) WHERE Z_PK = OLD.Z_PK ; END")
            }
        }
        return statements
    }

    /// Framework versions (NSPersistenceFrameworkVersion) from which Core Data writes a metadata
    /// key, bounded by the real stores: the last version seen without it and the first seen with it.
    public enum FrameworkVersion {
        /// `NSStoreModelVersionHashesDigest`: absent at 851 (knowledgeC, macOS 10.13), present at 977 (Photos, macOS 10.15).
        public static let hashesDigest = 900
        /// `NSStoreModelVersionChecksumKey`: absent at 1152 (Notes, macOS 12), present at 1340 (iOS 17).
        public static let modelChecksum = 1300
        /// Uniqueness constraints as `Z_<Entity>_UNIQUE_…` indexes: framework 851 (knowledgeC) writes a
        /// one-property constraint as a column-level `UNIQUE`; 977 (Photos 10.15) writes indexes.
        public static let uniquenessIndexes = 900
        /// History strings interned in ATRANSACTIONSTRING (the `…TS` columns): absent at 851
        /// (knowledgeC, which keeps author, bundle, context and process as text), present at 977.
        public static let internedHistoryStrings = 900
    }

    /// Derived attributes that copy a value through a to-one relationship (`rel.attribute`): the
    /// four triggers Core Data writes, in the form the iOS 17 and Photos stores show. Derivations
    /// of any other form (aggregates, functions) get none here.
    public var derivedAttributeDDL: [String] {
        var statements: [String] = []
        for e in entities {
            for a in e.description.attributes {
                guard let derivation = a.derivation else { continue }
                let parts = derivation.split(separator: ".").map(String.init)
                guard parts.count == 2,
                      let relationship = e.lineage.compactMap({ model.entity($0) }).flatMap(\.relationships).first(where: { $0.name == parts[0] && !$0.isToMany }),
                      let destination = entity(relationship.destination),
                      let derived = column(entity: e.description.name, property: a.name),
                      let key = column(entity: e.description.name, property: relationship.name),
                      let source = column(entity: destination.description.name, property: parts[1]) else { continue }
                let (table, other, entityName) = (e.table, destination.table, e.description.name)
                func notify(_ inserted: Bool, _ condition: String) -> String {
                    "SELECT NSCoreDataDATrigger\(inserted ? "Insert" : "")UpdatedAffectedObjectValue('\(table)', Z_ENT, Z_PK, '\(a.name)', \(derived)) FROM \(table) WHERE \(condition); END"
                }
                let fromSource = "UPDATE \(table) SET \(derived) = (SELECT \(source) FROM \(other) WHERE Z_PK = NEW.\(key)) WHERE Z_PK = NEW.Z_PK;"
                let fromParameter = "UPDATE \(table) SET \(derived) = NEW.\(source) WHERE \(key) = NEW.Z_PK;"
                let prefix = "Z_DA_\(table)_\(entityName)_\(a.name)", parameterPrefix = "Z_DA_\(other)_\(entityName)_\(a.name)"
                statements.append("CREATE TRIGGER \(prefix)_SOURCE_INSERT AFTER INSERT ON \(table) FOR EACH ROW BEGIN \(fromSource) \(notify(true, "Z_PK = NEW.Z_PK"))")
                statements.append("CREATE TRIGGER \(prefix)_SOURCE_UPDATE AFTER UPDATE OF \(key) ON \(table) FOR EACH ROW BEGIN \(fromSource) \(notify(false, "Z_PK = NEW.Z_PK"))")
                statements.append("CREATE TRIGGER \(parameterPrefix)_PARAMETER_INSERT AFTER INSERT ON \(other) FOR EACH ROW BEGIN \(fromParameter) \(notify(true, "\(key) = NEW.Z_PK"))")
                statements.append("CREATE TRIGGER \(parameterPrefix)_PARAMETER_UPDATE AFTER UPDATE OF \(source) ON \(other) FOR EACH ROW BEGIN \(fromParameter) \(notify(false, "\(key) = NEW.Z_PK"))")
            }
        }
        return statements
    }

    public static let metadataDDL = [
        "CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER)",
        "CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB)",
    ]
    public static let modelCacheDDL = "CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB)"

    /// Persistent history tables, verbatim from real stores (2020 and 2024 are byte-identical).
    public static let historyDDL = [
        "CREATE TABLE ACHANGE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCHANGETYPE INTEGER, ZENTITY INTEGER, ZENTITYPK INTEGER, ZTRANSACTIONID INTEGER, ZCOLUMNS BLOB )",
        "CREATE TABLE ATRANSACTION ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHORTS INTEGER, ZBUNDLEIDTS INTEGER, ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT, ZAUTHOR VARCHAR, ZBUNDLEID VARCHAR, ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB )",
        "CREATE TABLE ATRANSACTIONSTRING ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR )",
        "CREATE INDEX ACHANGE_ZTRANSACTIONID_INDEX ON ACHANGE (ZTRANSACTIONID)",
        "CREATE INDEX ATRANSACTION_ZAUTHORTS_INDEX ON ATRANSACTION (ZAUTHORTS)",
        "CREATE INDEX ATRANSACTION_ZBUNDLEIDTS_INDEX ON ATRANSACTION (ZBUNDLEIDTS)",
        "CREATE INDEX ATRANSACTION_ZCONTEXTNAMETS_INDEX ON ATRANSACTION (ZCONTEXTNAMETS)",
        "CREATE INDEX ATRANSACTION_ZPROCESSIDTS_INDEX ON ATRANSACTION (ZPROCESSIDTS)",
        "CREATE INDEX Z_TRANSACTION_TransactionAuthorIndex ON ATRANSACTION (ZAUTHOR COLLATE BINARY ASC)",
        "CREATE INDEX Z_TRANSACTION_TransactionTimestampIndex ON ATRANSACTION (ZTIMESTAMP COLLATE BINARY ASC)",
        "CREATE UNIQUE INDEX Z_TRANSACTIONSTRING_UNIQUE_NAME ON ATRANSACTIONSTRING (ZNAME COLLATE BINARY ASC)",
    ]

    /// Persistent history as framework 851 wrote it (knowledgeC, macOS 10.13): the writer's names
    /// as text in ATRANSACTION, no ATRANSACTIONSTRING.
    public static let legacyHistoryDDL = [
        historyDDL[0],
        "CREATE TABLE ATRANSACTION ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZTIMESTAMP FLOAT, ZAUTHOR VARCHAR, ZBUNDLEID VARCHAR, ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB )",
    ] + historyDDL.filter { $0.contains("INDEX") && !$0.contains("TS_INDEX") && !$0.contains("ATRANSACTIONSTRING") }

    /// The attributes a delete keeps in `ZTOMBSTONE0…n`: root level first, each level's
    /// preserved attributes by name (knowledgeC's Event, Screen Time's InstalledApp).
    public func tombstoneOrder(entity name: String) -> [String] {
        guard let e = entity(name) else { return [] }
        return e.lineage.compactMap { model.entity($0) }.flatMap { level in
            level.attributes.filter(\.preservesValueOnDeletion).map(\.name).sorted()
        }
    }

    /// How many `ZTOMBSTONE<n>` columns ACHANGE needs: the most any entity preserves.
    public var tombstoneColumnCount: Int {
        entities.map { tombstoneOrder(entity: $0.description.name).count }.max() ?? 0
    }

    /// The properties whose changes an update's ZCOLUMNS bitmap records, in bit order:
    /// to-one keys, entity keys, order keys, attributes, to-many, many-to-many; within each
    /// group, root entity first and each level's properties by name (coredata-sqlite-format.md §4.3).
    public func updateBitOrder(entity name: String) -> [String] {
        guard let e = entity(name) else { return [] }
        let levels = e.lineage.compactMap { model.entity($0) }
        var toOne: [String] = [], entityKeys: [String] = [], orderKeys: [String] = [], attributes: [String] = [],
            toMany: [String] = [], manyToMany: [String] = []
        let hasChildren = Set(model.entities.compactMap(\.parent))
        for level in levels {
            let rels = level.relationships.sorted { $0.name < $1.name }
            toOne += rels.filter { !$0.isToMany }.map(\.name)
            entityKeys += rels.filter { !$0.isToMany && hasChildren.contains($0.destination) }.map(\.name)
            orderKeys += rels.filter { r in
                guard !r.isToMany, let inv = r.inverse, let d = model.entity(r.destination),
                      let ir = d.relationships.first(where: { $0.name == inv }) else { return false }
                return ir.isToMany && ir.isOrdered
            }.map(\.name)
            attributes += level.attributes.map(\.name).sorted()
            for r in rels where r.isToMany {
                let inverseIsToMany = r.inverse.flatMap { inv in model.entity(r.destination)?.relationships.first { $0.name == inv } }?.isToMany ?? false
                if inverseIsToMany { manyToMany.append(r.name) } else { toMany.append(r.name) }
            }
        }
        return toOne + entityKeys + orderKeys + attributes + toMany + manyToMany
    }
}
