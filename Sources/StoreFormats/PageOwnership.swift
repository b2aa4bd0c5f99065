import Foundation

/// A table or index of a database, as `sqlite_schema` names it, with the
/// b-tree page it is rooted at. Page 1's own tree is `sqlite_schema`.
public struct DatabaseObject: Hashable, Sendable {
    /// `"table"` or `"index"`.
    public let type: String
    /// The object's name (`ZITEM`, `ZITEM_ZNAME_INDEX`, `sqlite_autoindex_Z_METADATA_1` …).
    public let name: String
    /// The table the object belongs to (`tbl_name`): the table itself, or an index's table.
    public let tableName: String
    /// The root page of its b-tree.
    public let rootPage: UInt32

    public init(type: String, name: String, tableName: String, rootPage: UInt32) {
        self.type = type
        self.name = name
        self.tableName = tableName
        self.rootPage = rootPage
    }

    /// The schema table itself, rooted at page 1.
    public static let schema = DatabaseObject(type: "table", name: "sqlite_schema", tableName: "sqlite_schema", rootPage: 1)
}

/// What one database page is used for at a given commit.
public struct PageUse: Hashable, Sendable {
    public enum Kind: String, Sendable {
        /// An interior b-tree page (dbstat's `internal`).
        case interior
        /// A leaf b-tree page.
        case leaf
        /// A page of an overflow chain holding the tail of a large cell.
        case overflow
        /// A freelist trunk page.
        case freelistTrunk
        /// A free page listed on a trunk.
        case freelistLeaf
        /// A pointer-map page of an auto-vacuum database.
        case pointerMap
        /// The page holding the lock byte at offset 1 GiB, never used for data.
        case lockByte
    }

    public let kind: Kind
    /// The table or index whose b-tree holds the page; nil for the non-b-tree kinds.
    public let object: DatabaseObject?

    public init(kind: Kind, object: DatabaseObject?) {
        self.kind = kind
        self.object = object
    }
}

/// Something wrong with a database's structure, found while walking it.
public struct BTreeProblem: Hashable, Sendable, CustomStringConvertible {
    /// The structure being walked: a table or index name, `freelist` or `pointer map`.
    public let structure: String
    /// The page concerned.
    public let page: UInt32
    /// What is wrong, as a clause ("page 40 is past the end of the 24-page database").
    public let detail: String

    public init(structure: String, page: UInt32, detail: String) {
        self.structure = structure
        self.page = page
        self.detail = detail
    }

    public var description: String { "\(structure), page \(page): \(detail)" }
}

/// Why page ownership could not be worked out.
public enum PageOwnershipError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The main file's header is unreadable.
    case mainFile(DatabaseHeaderError)
    /// Neither the main file nor the WAL gives a page size.
    case noPageSize
    /// The WAL's page size differs from the main file's.
    case pageSizeMismatch(mainFile: Int, wal: Int)
    /// The WAL bytes given are not the ones the `WAL` value was parsed from.
    case walDataMismatch
    /// The requested commit does not exist.
    case commitOutOfRange(requested: Int, available: Int)

    public var description: String {
        switch self {
        case .mainFile(let error):
            "The main database file is unreadable: \(error)"
        case .noPageSize:
            "Neither the main file nor the WAL gives a usable page size."
        case .pageSizeMismatch(let main, let wal):
            "The WAL's page size (\(wal) bytes) differs from the main database file's (\(main) bytes), so the WAL does not belong to this database."
        case .walDataMismatch:
            "The WAL bytes given are not the ones that were parsed."
        case .commitOutOfRange(let requested, let available):
            "Commit \(requested) does not exist: the WAL has \(plural(available, "valid commit"))."
        }
    }
}

/// Which table or index every page of a database belongs to, commit by
/// commit through a WAL, worked out by walking the b-trees of each
/// committed image the way SQLite's `dbstat` does, in pure Swift.
///
/// The tracker starts at one commit (0 is the main file alone) and moves
/// forward with `advance()`. Moving forward re-reads only the structures
/// the commit wrote to: a b-tree's set of pages can change only when one
/// of its own pages is written, so untouched trees keep their pages, and
/// pages that were not written reuse what was read from them before. A
/// 100 MB WAL with thousands of commits therefore costs little more than
/// one walk of the database.
///
/// Within a tree that was written, only the pages on the way from a written page up to the root
/// are read again: a subtree none of whose pages was written has the same pages it had (its
/// pages' bytes are unchanged), so it is kept whole where its old parent still points to it. That
/// shortcut is taken only while the image has no structural problem; a commit after which any
/// problem shows (or anything the shortcut cannot vouch for: a page reached from an unexpected
/// place, a depth that changed, a database that shrank) is undone and walked the full way, so the
/// answer, problems included, is always the full walk's.
///
/// Nothing here trusts the bytes: page numbers are range-checked, cycles
/// and pages claimed twice are reported as `problems`, and payload sizes
/// are bounded by the database size.
///
/// For example:
/// ```swift
/// let tracker = try PageOwnershipTracker(mainFile: main, wal: wal, walData: walBytes)
/// while tracker.advance() {
///     let tables = Set(wal.transactions[tracker.commit - 1].pages.compactMap { tracker.use(of: $0)?.object?.tableName })
/// }
/// ```
public final class PageOwnershipTracker {
    /// The commit whose image is described: 0 is the main file alone, n the n-th WAL commit.
    public private(set) var commit: Int
    /// Database size in pages at `commit`.
    public private(set) var pageCount: Int
    /// Page size in bytes.
    public let pageSize: Int

    private let mainFile: Data
    private let walData: Data
    private let transactions: [WALTransaction]
    private let frames: [WALFrame]
    private var geometry: BTreePage.Geometry

    /// Where each page's current content is: a byte offset into the WAL, or -1 for the main file.
    private var walOffset: [Int] = [0]
    /// Per page: a tree index (>= 0) or one of the `Owner` codes below.
    private var owner: [Int32] = [Owner.none]
    /// Per page: the `PageUse.Kind` raw index, for tree pages.
    private var role: [UInt8] = [0]
    /// Per page: the links read from its current content, when it was read as a b-tree page.
    private var cache: [BTreePage.Links?] = [nil]
    /// Per page: the walk that last visited it, to catch cycles and pages referenced twice.
    private var visited: [UInt32] = [0]
    private var walkNumber: UInt32 = 0
    private var pagesRead = 0
    /// The working copy's files, read with `pread` (-1: read through the data instead).
    private var mainDescriptor: Int32 = -1
    private var walDescriptor: Int32 = -1
    /// One page, for `pread`.
    private var pageBuffer: UnsafeMutableRawBufferPointer?

    deinit {
        if mainDescriptor >= 0 { close(mainDescriptor) }
        if walDescriptor >= 0 { close(walDescriptor) }
        pageBuffer?.deallocate()
    }
    /// Per page: the b-tree page that references it (for an overflow page, the page holding the
    /// cell whose chain it is part of); 0 for a root.
    private var parent: [UInt32] = [0]
    /// Per page: its depth in its b-tree, for b-tree pages.
    private var depth: [UInt8] = [0]
    /// Per page, for the subtree-reusing advance: `pass` when on the way from a written page to
    /// its root; in `reachMark`, `2 * pass` when kept whole this pass, `2 * pass + 1` when read
    /// again this pass.
    private var dirtyMark: [UInt32] = [0]
    private var reachMark: [UInt32] = [0]
    private var pass: UInt32 = 0
    /// Per overflow page: the next page of its chain, as last walked.
    private var nextOverflow: [UInt32] = [0]
    /// Trees the current advance re-reads from their written pages up rather than in full, with
    /// their marked pages.
    private var partialTrees: [Int: [UInt32]] = [:]
    /// The links of the pages the current advance wrote, as they were before it.
    private var writtenPagesLinks: [UInt32: BTreePage.Links] = [:]
    /// Set when the subtree-reusing advance meets something only a full walk can judge.
    private var partialFailed = false
    /// Whether `advance()` may keep unchanged subtrees (tests turn it off to compare).
    var reusesUnchangedSubtrees = true
    /// How many advances kept unchanged subtrees (the rest walked every written tree in full).
    private(set) var advancesReusingSubtrees = 0

    private struct Tree {
        var object: DatabaseObject
        var pages: [UInt32] = []
        var problems: [BTreeProblem] = []
        var live = true
        /// Whether its pages are table pages, as of its last walk.
        var isTable: Bool?
        /// The length of `pages` when it last held only the tree's pages.
        var compactedCount = 0
    }
    private var trees: [Tree] = []
    private var treeByName: [String: Int] = [:]
    private var schemaProblems: [BTreeProblem] = []
    private var freelistPages: [UInt32] = []
    private var freelistProblems: [BTreeProblem] = []
    private var reservedPages: [UInt32] = []
    private var reservedProblems: [BTreeProblem] = []
    private var sizeProblems: [BTreeProblem] = []
    /// The most pages any image can have content for: every page comes from the main file or a
    /// WAL frame. Commit sizes and page numbers beyond it come from a damaged or hostile WAL and
    /// are cut to it, so memory stays proportional to the input.
    private let maxPages: Int
    private var textEncoding: UInt32 = 1
    private var autoVacuum = false

    private enum Owner {
        static let none: Int32 = -1
        static let freelistTrunk: Int32 = -2
        static let freelistLeaf: Int32 = -3
        static let pointerMap: Int32 = -4
        static let lockByte: Int32 = -5
    }
    private static let kinds: [PageUse.Kind] = [.interior, .leaf, .overflow]

    /// Prepares the tracker at commit `startCommit` (0: the main file alone)
    /// and walks that image completely.
    ///
    /// A WAL whose header SQLite ignores is ignored here too (it has no commits).
    ///
    /// - Throws: `PageOwnershipError`.
    ///
    /// - Parameter files: the files `mainFile` and `walData` were mapped from (storelens's working
    ///   copy): pages are then read from them with `pread` into a buffer of one page, so memory
    ///   stays a few pages whatever the store's size (through the mapping, one page read can
    ///   leave megabytes resident). Files that cannot be opened are read through the data.
    public init(mainFile: Data, wal: WAL? = nil, walData: Data? = nil, startCommit: Int = 0,
                files: (main: String, wal: String?)? = nil) throws(PageOwnershipError) {
        self.mainFile = mainFile
        var mainHeader: DatabaseHeader?
        if !mainFile.isEmpty {
            do { mainHeader = try DatabaseHeader(data: mainFile) } catch { throw .mainFile(error) }
        }
        let usableWAL = wal.flatMap { $0.isUsable ? $0 : nil }
        if let usableWAL, !usableWAL.transactions.isEmpty {
            guard let walData, walData.count == usableWAL.fileSize else { throw .walDataMismatch }
            self.walData = walData
            transactions = usableWAL.transactions
            frames = usableWAL.frames
        } else {
            self.walData = Data()
            transactions = []
            frames = []
        }
        let walPageSize = transactions.isEmpty ? nil : usableWAL?.pageSize
        if let mainHeader, let walPageSize, mainHeader.pageSize != walPageSize {
            throw .pageSizeMismatch(mainFile: mainHeader.pageSize, wal: walPageSize)
        }
        guard let pageSize = mainHeader?.pageSize ?? walPageSize else { throw .noPageSize }
        self.pageSize = pageSize
        maxPages = (mainFile.count + self.walData.count) / pageSize + 1
        let reserved = Int(mainHeader?.reservedBytesPerPage ?? 0)
        geometry = BTreePage.Geometry(pageSize: pageSize, usableSize: max(480, pageSize - reserved))
        guard startCommit >= 0, startCommit <= transactions.count else {
            throw .commitOutOfRange(requested: startCommit, available: transactions.count)
        }
        commit = startCommit
        pageCount = 0
        // Opened once nothing can throw: a class whose initializer throws never runs `deinit`.
        if let files {
            mainDescriptor = open(files.main, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            if !transactions.isEmpty { walDescriptor = files.wal.map { open($0, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) } ?? -1 }
        }

        let size = startCommit == 0 ? mainFile.count / pageSize : transactions[startCommit - 1].databaseSizeInPages
        if startCommit > 0 {
            for frame in frames.prefix(transactions[startCommit - 1].commitFrame) {
                setWALOffset(page: frame.pageNumber, offset: frame.pageOffset)
            }
        }
        resize(to: size)
        readPageOneFacts()
        rebuildReserved()
        rewalkSchema(dirty: [])
        rebuildFreelist()
    }

    // MARK: - Moving forward

    /// Applies the next commit and re-reads what it changed; false when there is none.
    @discardableResult
    public func advance() -> Bool {
        guard commit < transactions.count else { return false }
        let transaction = transactions[commit]
        if reusesUnchangedSubtrees, problems.isEmpty, transaction.databaseSizeInPages >= pageCount {
            let before = State(of: self)
            if advance(reusingSubtrees: true), !partialFailed, problems.isEmpty {
                advancesReusingSubtrees += 1
                return true
            }
            before.restore(into: self)
        }
        return advance(reusingSubtrees: false)
    }

    /// Everything `advance` changes, but the caches (re-derived from the pages' bytes) and the
    /// walk marks (which only ever grow): so a subtree-reusing advance can be undone.
    private struct State {
        let commit: Int, pageCount: Int, geometry: BTreePage.Geometry, textEncoding: UInt32, autoVacuum: Bool
        let walOffset: [Int], owner: [Int32], role: [UInt8], parent: [UInt32], depth: [UInt8], nextOverflow: [UInt32]
        let trees: [Tree], treeByName: [String: Int], schemaProblems: [BTreeProblem]
        let freelistPages: [UInt32], freelistProblems: [BTreeProblem]
        let reservedPages: [UInt32], reservedProblems: [BTreeProblem], sizeProblems: [BTreeProblem]

        init(of t: PageOwnershipTracker) {
            (commit, pageCount, geometry, textEncoding, autoVacuum) = (t.commit, t.pageCount, t.geometry, t.textEncoding, t.autoVacuum)
            (walOffset, owner, role, parent, depth, nextOverflow) = (t.walOffset, t.owner, t.role, t.parent, t.depth, t.nextOverflow)
            (trees, treeByName, schemaProblems) = (t.trees, t.treeByName, t.schemaProblems)
            (freelistPages, freelistProblems) = (t.freelistPages, t.freelistProblems)
            (reservedPages, reservedProblems, sizeProblems) = (t.reservedPages, t.reservedProblems, t.sizeProblems)
        }

        func restore(into t: PageOwnershipTracker) {
            (t.commit, t.pageCount, t.geometry, t.textEncoding, t.autoVacuum) = (commit, pageCount, geometry, textEncoding, autoVacuum)
            // Arrays may have grown since: pages past the old length are unused and stay so.
            t.walOffset.replaceSubrange(0 ..< walOffset.count, with: walOffset)
            t.owner.replaceSubrange(0 ..< owner.count, with: owner)
            t.role.replaceSubrange(0 ..< role.count, with: role)
            t.parent.replaceSubrange(0 ..< parent.count, with: parent)
            t.depth.replaceSubrange(0 ..< depth.count, with: depth)
            t.nextOverflow.replaceSubrange(0 ..< nextOverflow.count, with: nextOverflow)
            for page in owner.count ..< t.owner.count {
                t.walOffset[page] = -1
                t.owner[page] = Owner.none
                t.cache[page] = nil
            }
            (t.trees, t.treeByName, t.schemaProblems) = (trees, treeByName, schemaProblems)
            (t.freelistPages, t.freelistProblems) = (freelistPages, freelistProblems)
            (t.reservedPages, t.reservedProblems, t.sizeProblems) = (reservedPages, reservedProblems, sizeProblems)
        }
    }

    private func advance(reusingSubtrees: Bool) -> Bool {
        let transaction = transactions[commit]
        commit += 1
        var written = Set<UInt32>()
        for frame in frames[(transaction.firstFrame - 1) ..< transaction.commitFrame] {
            setWALOffset(page: frame.pageNumber, offset: frame.pageOffset)
            written.insert(frame.pageNumber)
        }
        var dirty = Set<Int>()
        var freelistDirty = false
        for page in written where Int(page) < owner.count {
            let current = owner[Int(page)]
            if current >= 0 { dirty.insert(Int(current)) }
            if current == Owner.freelistTrunk || current == Owner.freelistLeaf { freelistDirty = true }
            if reusingSubtrees, current >= 0, let links = cache[Int(page)] { writtenPagesLinks[page] = links }
            cache[Int(page)] = nil
        }
        let newCount = transaction.databaseSizeInPages
        if newCount < pageCount {
            for page in (newCount + 1)...pageCount {
                let current = owner[page]
                if current >= 0 { dirty.insert(Int(current)) }
                if current == Owner.freelistTrunk || current == Owner.freelistLeaf { freelistDirty = true }
            }
        }
        let pageOneWritten = written.contains(1)
        if pageOneWritten { freelistDirty = true }
        let reservedDirty = pageOneWritten || newCount != pageCount

        // Forget everything about to be re-read before reading anything, so a
        // page that moved from one structure to another is not seen as claimed twice.
        partialTrees = [:]
        partialFailed = false
        defer { writtenPagesLinks = [:] }
        if reusingSubtrees {
            pass &+= 1
            if pass == 0 || pass >= UInt32.max / 2 {
                for i in dirtyMark.indices { dirtyMark[i] = 0; reachMark[i] = 0 }
                pass = 1
            }
            // Mark every tree first, then release: marking follows owners as they were.
            for tree in dirty where tree > 0 {
                if let marked = markWrittenPaths(tree: tree, written: written) { partialTrees[tree] = marked }
            }
        }
        for tree in dirty {
            if partialTrees[tree] != nil { releaseWrittenPaths(tree: tree) } else { clear(tree: tree) }
        }
        if freelistDirty { clearFreelist() }
        if reservedDirty { clearReserved() }
        resize(to: newCount)
        if pageOneWritten { readPageOneFacts() }
        if reservedDirty { rebuildReserved() }
        if dirty.contains(0) || pageOneWritten {
            rewalkSchema(dirty: dirty)
        } else {
            for tree in dirty.sorted() where trees[tree].live { walkTree(tree) }
        }
        if freelistDirty { rebuildFreelist() }
        partialTrees = [:]
        return true
    }

    /// Advances until `commit == n` (never backwards).
    public func advance(toCommit n: Int) {
        while commit < n, advance() {}
    }

    // MARK: - Answers

    /// What `page` is used for at `commit`, or nil when nothing reaches it
    /// (or it is past the end of the database).
    public func use(of page: UInt32) -> PageUse? {
        let index = Int(page)
        guard index >= 1, index <= pageCount else { return nil }
        let current = owner[index]
        switch current {
        case Owner.freelistTrunk: return PageUse(kind: .freelistTrunk, object: nil)
        case Owner.freelistLeaf: return PageUse(kind: .freelistLeaf, object: nil)
        case Owner.pointerMap: return PageUse(kind: .pointerMap, object: nil)
        case Owner.lockByte: return PageUse(kind: .lockByte, object: nil)
        case let tree where tree >= 0:
            return PageUse(kind: Self.kinds[Int(role[index])], object: trees[Int(tree)].object)
        default: return nil
        }
    }

    /// For an overflow page in use at `commit`: the b-tree page holding the cell whose chain it is
    /// part of (carving asks which live cell a chain belongs to).
    public func overflowOwner(of page: UInt32) -> UInt32? {
        let index = Int(page)
        guard index >= 1, index <= pageCount, owner[index] >= 0, role[index] == 2, parent[index] != 0 else { return nil }
        return parent[index]
    }

    /// Every page in use at `commit`, with its use.
    public func pageUses() -> [UInt32: PageUse] {
        var result: [UInt32: PageUse] = [:]
        for page in stride(from: 1, through: pageCount, by: 1) {
            if let use = use(of: UInt32(page)) { result[UInt32(page)] = use }
        }
        return result
    }

    /// The tables and indexes with a b-tree at `commit`, `sqlite_schema` first.
    public var objects: [DatabaseObject] { trees.filter(\.live).map(\.object) }

    /// Pages within the database that no b-tree, freelist or pointer map
    /// reaches. SQLite's integrity check calls these "never used"; in a
    /// consistent database there are none.
    public var unaccountedPages: [UInt32] {
        guard pageCount >= 1 else { return [] }
        return (1...pageCount).filter { owner[$0] == Owner.none }.map { UInt32($0) }
    }

    /// Structural problems found in the image at `commit`, as of the last
    /// time each structure was read.
    public var problems: [BTreeProblem] {
        sizeProblems + schemaProblems + trees.filter(\.live).flatMap(\.problems) + freelistProblems + reservedProblems
    }

    // MARK: - Pages

    private func setWALOffset(page: UInt32, offset: Int) {
        let index = Int(page)
        // A page past every possible size can never be read.
        guard index <= maxPages else { return }
        if index >= walOffset.count { grow(to: index) }
        walOffset[index] = offset
    }

    private func grow(to page: Int) {
        guard page >= walOffset.count else { return }
        let extra = page + 1 - walOffset.count
        walOffset.append(contentsOf: repeatElement(-1, count: extra))
        owner.append(contentsOf: repeatElement(Owner.none, count: extra))
        role.append(contentsOf: repeatElement(0, count: extra))
        cache.append(contentsOf: repeatElement(nil, count: extra))
        visited.append(contentsOf: repeatElement(0, count: extra))
        parent.append(contentsOf: repeatElement(0, count: extra))
        nextOverflow.append(contentsOf: repeatElement(0, count: extra))
        depth.append(contentsOf: repeatElement(0, count: extra))
        dirtyMark.append(contentsOf: repeatElement(0, count: extra))
        reachMark.append(contentsOf: repeatElement(0, count: extra))
    }

    private func resize(to requested: Int) {
        var count = requested
        sizeProblems = []
        if requested > maxPages {
            count = maxPages
            sizeProblems.append(BTreeProblem(structure: "database size", page: UInt32(clamping: requested),
                                             detail: "commit \(commit) gives the database \(requested) pages, but the main file and WAL hold at most \(maxPages)"))
        }
        grow(to: count)
        if count < pageCount {
            for page in (count + 1)...pageCount { owner[page] = Owner.none }
        }
        pageCount = count
    }

    /// Runs `body` on the current content of `page` (zeros when neither the
    /// WAL nor the main file holds it).
    private func withPage<R>(_ page: UInt32, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let index = Int(page)
        pagesRead &+= 1
        if pagesRead & 255 == 0 { MappedFile.noteBytesRead(256 * pageSize) }
        let offset = index < walOffset.count ? walOffset[index] : -1
        if offset >= 0, walDescriptor >= 0 {
            guard offset + pageSize <= walData.count else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
            return read(walDescriptor, at: offset, body) ?? body(UnsafeRawBufferPointer(start: nil, count: 0))
        }
        if offset < 0, mainDescriptor >= 0 {
            let start = (index - 1) * pageSize
            guard start >= 0, start + pageSize <= mainFile.count, let result = read(mainDescriptor, at: start, body) else {
                return Self.zeroPage(pageSize, body)
            }
            return result
        }
        if offset >= 0 {
            return walData.withUnsafeBytes { raw in
                guard offset + pageSize <= raw.count else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
                return body(UnsafeRawBufferPointer(rebasing: raw[offset ..< offset + pageSize]))
            }
        }
        let start = (index - 1) * pageSize
        return mainFile.withUnsafeBytes { raw in
            guard start >= 0, start + pageSize <= raw.count else {
                return Self.zeroPage(pageSize, body)
            }
            return body(UnsafeRawBufferPointer(rebasing: raw[start ..< start + pageSize]))
        }
    }

    /// One page of `descriptor` at `offset`, or nil when it cannot be read whole.
    private func read<R>(_ descriptor: Int32, at offset: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R? {
        let buffer = pageBuffer ?? UnsafeMutableRawBufferPointer.allocate(byteCount: pageSize, alignment: 16)
        pageBuffer = nil
        defer { if pageBuffer == nil { pageBuffer = buffer } else { buffer.deallocate() } }
        var done = 0
        while done < pageSize {
            let n = pread(descriptor, buffer.baseAddress! + done, pageSize - done, off_t(offset + done))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            done += n
        }
        return body(UnsafeRawBufferPointer(buffer))
    }

    private static func zeroPage<R>(_ size: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let zeros = [UInt8](repeating: 0, count: size)
        return zeros.withUnsafeBytes(body)
    }

    /// Header facts of the current page 1 that decide the other structures.
    private func readPageOneFacts() {
        guard pageCount >= 1 else { return }
        withPage(1) { page in
            textEncoding = BTreePage.u32(page, 56) ?? 1
            autoVacuum = (BTreePage.u32(page, 52) ?? 0) != 0
            let reserved = page.count > 20 ? Int(page[20]) : 0
            geometry = BTreePage.Geometry(pageSize: pageSize, usableSize: max(480, pageSize - reserved))
        }
    }

    private var maxPayload: Int { (pageCount + 1) * max(1, geometry.usableSize) }

    private func links(of page: UInt32) -> BTreePage.Links {
        if let cached = cache[Int(page)] { return cached }
        let geometry = geometry, maxPayload = maxPayload
        let links = withPage(page) { raw in
            BTreePage.links(raw, headerOffset: page == 1 ? 100 : 0, geometry: geometry, maxPayload: maxPayload)
        }
        cache[Int(page)] = links
        return links
    }

    // MARK: - Claiming pages

    /// Records `page` for `claimant`; false (and a problem) when something else already holds it.
    private func claim(_ page: UInt32, by claimant: Int32, role kind: UInt8 = 0, structure: String,
                       problems: inout [BTreeProblem]) -> Bool {
        let index = Int(page)
        let current = owner[index]
        guard current == Owner.none || current == claimant else {
            problems.append(BTreeProblem(structure: structure, page: page,
                                         detail: "the page is already used by \(describe(owner: current))"))
            return false
        }
        owner[index] = claimant
        role[index] = kind
        return true
    }

    private func describe(owner code: Int32) -> String {
        switch code {
        case Owner.freelistTrunk, Owner.freelistLeaf: return "the freelist"
        case Owner.pointerMap: return "the pointer map"
        case Owner.lockByte: return "the lock-byte page"
        case let tree where tree >= 0 && Int(tree) < trees.count: return trees[Int(tree)].object.name
        default: return "something else"
        }
    }

    private func inRange(_ page: UInt32) -> Bool { page >= 1 && Int(page) <= pageCount }

    // MARK: - B-trees

    /// Re-reads `sqlite_schema` and walks the trees in `dirty` (already
    /// cleared by the caller) plus every tree that is new or whose root moved.
    private func rewalkSchema(dirty: Set<Int>) {
        if trees.isEmpty {
            trees.append(Tree(object: .schema))
            treeByName[DatabaseObject.schema.name] = 0
        }
        var toWalk = dirty
        schemaProblems = []
        guard pageCount >= 1 else {
            // An empty database (a main file never written, before the first commit).
            for index in trees.indices {
                clear(tree: index)
                if index > 0 { trees[index].live = false }
            }
            return
        }
        clear(tree: 0)
        walk(tree: 0)
        let listed = readSchemaObjects()

        var seen = Set<String>([DatabaseObject.schema.name])
        var changed: [Int] = []
        for object in listed {
            guard seen.insert(object.name).inserted else {
                schemaProblems.append(BTreeProblem(structure: DatabaseObject.schema.name, page: object.rootPage,
                                                   detail: "the name \(object.name) is listed twice"))
                continue
            }
            if let index = treeByName[object.name] {
                if trees[index].object != object || !trees[index].live {
                    changed.append(index)
                    trees[index].object = object
                    trees[index].live = true
                }
            } else {
                trees.append(Tree(object: object))
                treeByName[object.name] = trees.count - 1
                changed.append(trees.count - 1)
            }
        }
        for index in trees.indices where index > 0 && trees[index].live && !seen.contains(trees[index].object.name) {
            clear(tree: index)
            trees[index].live = false
            toWalk.remove(index)
        }
        for index in changed {
            clear(tree: index)
            toWalk.insert(index)
        }
        toWalk.remove(0)
        for index in toWalk.sorted() where trees[index].live { walkTree(index) }
    }

    private func clear(tree index: Int) {
        partialTrees[index] = nil
        let claimant = Int32(index)
        for page in trees[index].pages where Int(page) < owner.count && owner[Int(page)] == claimant {
            owner[Int(page)] = Owner.none
        }
        trees[index].pages = []
        trees[index].problems = []
    }

    /// A mark no page's `visited` holds yet, for one walk.
    private func nextWalkMark() -> UInt32 {
        walkNumber &+= 1
        if walkNumber == 0 {
            for i in visited.indices { visited[i] = 0 }
            walkNumber = 1
        }
        return walkNumber
    }

    /// Walks one b-tree from its root, claiming its interior, leaf and overflow pages.
    private func walk(tree index: Int) {
        let mark = nextWalkMark()
        let claimant = Int32(index)
        let name = trees[index].object.name
        var pages: [UInt32] = []
        var problems: [BTreeProblem] = []
        var expectTable: Bool?
        // (page, depth, referencing page)
        var stack: [(UInt32, Int, UInt32)] = [(trees[index].object.rootPage, 0, 0)]

        func visit(_ page: UInt32, from parent: UInt32, what: String) -> Bool {
            guard inRange(page) else {
                problems.append(BTreeProblem(structure: name, page: parent,
                                             detail: "it points to \(what) \(page), past the end of the \(pageCount)-page database"))
                return false
            }
            guard visited[Int(page)] != mark else {
                problems.append(BTreeProblem(structure: name, page: page, detail: "the page is reached twice (a cycle or a shared page)"))
                return false
            }
            visited[Int(page)] = mark
            return true
        }

        while let (page, depth, parentPage) = stack.popLast() {
            guard visit(page, from: parentPage, what: "page") else { continue }
            guard depth <= 40 else {
                problems.append(BTreeProblem(structure: name, page: page, detail: "the b-tree is deeper than any real SQLite b-tree"))
                continue
            }
            let links = links(of: page)
            guard links.isValidType else {
                problems.append(BTreeProblem(structure: name, page: page, detail: links.damage ?? "it is not a b-tree page"))
                continue
            }
            if let expectTable, expectTable != links.isTable {
                problems.append(BTreeProblem(structure: name, page: page,
                                             detail: links.isTable ? "a table page inside an index b-tree" : "an index page inside a table b-tree"))
                continue
            }
            expectTable = links.isTable
            guard claim(page, by: claimant, role: links.isInterior ? 0 : 1, structure: name, problems: &problems) else {
                continue
            }
            parent[Int(page)] = parentPage
            self.depth[Int(page)] = UInt8(depth)
            pages.append(page)
            if let damage = links.damage {
                problems.append(BTreeProblem(structure: name, page: page, detail: damage))
            }
            for child in links.children.reversed() { stack.append((child, depth + 1, page)) }
            for chain in links.overflows {
                var current = chain.firstPage
                var from = page
                for step in 0..<chain.pageCount {
                    guard visit(current, from: from, what: "overflow page") else { break }
                    let claimed = claim(current, by: claimant, role: 2, structure: name, problems: &problems)
                    if claimed {
                        parent[Int(current)] = page
                        nextOverflow[Int(current)] = 0
                        pages.append(current)
                    }
                    guard step + 1 < chain.pageCount else { break }
                    let next = withPage(current) { BTreePage.u32($0, 0) ?? 0 }
                    if claimed { nextOverflow[Int(current)] = next }
                    guard next != 0 else {
                        problems.append(BTreeProblem(structure: name, page: current,
                                                     detail: "the overflow chain ends after \(step + 1) of its \(chain.pageCount) pages"))
                        break
                    }
                    from = current
                    current = next
                }
            }
        }
        trees[index].pages = pages
        trees[index].compactedCount = pages.count
        trees[index].problems = problems
        trees[index].isTable = expectTable
    }

    // MARK: - Re-reading a written tree from its written pages up

    private func walkTree(_ index: Int) {
        if partialTrees[index] != nil { walkPartially(tree: index) } else { walk(tree: index) }
    }

    /// Marks (`dirtyMark == pass`) every page of `tree` on the way from a page this commit wrote
    /// up to the root, and returns them; nil when the way up is broken or a marked page's links
    /// from before the commit are unknown, and the tree is then walked in full.
    private func markWrittenPaths(tree index: Int, written: Set<UInt32>) -> [UInt32]? {
        let claimant = Int32(index)
        let root = trees[index].object.rootPage
        guard trees[index].live, trees[index].problems.isEmpty, trees[index].isTable != nil,
              inRange(root), owner[Int(root)] == claimant else { return nil }
        var marked: [UInt32] = []
        for page in written where Int(page) < owner.count && owner[Int(page)] == claimant {
            var current = role[Int(page)] == 2 ? parent[Int(page)] : page
            var steps = 0
            while current != 0, dirtyMark[Int(current)] != pass {
                steps += 1
                guard Int(current) < owner.count, owner[Int(current)] == claimant, role[Int(current)] != 2,
                      steps <= 64, linksBefore(current) != nil else { return nil }
                dirtyMark[Int(current)] = pass
                marked.append(current)
                if current == root { break }
                current = parent[Int(current)]
                if current == 0 { return nil }
            }
        }
        return dirtyMark[Int(root)] == pass ? marked : nil
    }

    /// A page's links as they were before the current commit.
    private func linksBefore(_ page: UInt32) -> BTreePage.Links? { writtenPagesLinks[page] ?? cache[Int(page)] }

    /// Frees `page`'s overflow chains as they were before the current commit.
    private func releaseOverflows(of page: UInt32, links: BTreePage.Links, claimant: Int32) {
        for chain in links.overflows {
            var current = chain.firstPage
            for _ in 0..<chain.pageCount {
                let i = Int(current)
                guard inRange(current), owner[i] == claimant, role[i] == 2, parent[i] == page else { break }
                owner[i] = Owner.none
                current = nextOverflow[i]
            }
        }
    }

    /// Frees the marked pages of `tree` and the overflow pages of their cells: they are read again.
    private func releaseWrittenPaths(tree index: Int) {
        let claimant = Int32(index)
        for page in partialTrees[index] ?? [] {
            owner[Int(page)] = Owner.none
            if let links = linksBefore(page) { releaseOverflows(of: page, links: links, claimant: claimant) }
        }
    }

    /// Walks `tree` from its root through the marked pages only, keeping every unmarked subtree
    /// whole where the page that referenced it was marked (its pages' bytes are unchanged, so its
    /// pages are too); then frees the old subtrees no page points to any more. Anything a full
    /// walk would have to judge sets `partialFailed`.
    private func walkPartially(tree index: Int) {
        let mark = nextWalkMark()
        let claimant = Int32(index)
        let expectTable = trees[index].isTable
        let kept = 2 &* pass, reread = 2 &* pass &+ 1
        let marked = partialTrees[index] ?? []
        var added: [UInt32] = []
        var stack: [(UInt32, Int, UInt32)] = [(trees[index].object.rootPage, 0, 0)]
        defer {
            // The page list may hold pages the tree no longer has (`clear` and the readers check
            // the owner); it is compacted once it has doubled.
            trees[index].pages += added
            if trees[index].pages.count > 2 * trees[index].compactedCount + 4096 {
                trees[index].pages = trees[index].pages.filter { owner[Int($0)] == claimant }
                trees[index].compactedCount = trees[index].pages.count
            }
        }
        func fail() { partialFailed = true }
        /// Claims a free page for this walk; anything else (a page still held, by this tree or
        /// another structure) is for the full walk to judge.
        func take(_ page: UInt32, role kind: UInt8, from referencing: UInt32, depth pageDepth: Int) -> Bool {
            let i = Int(page)
            guard inRange(page), visited[i] != mark, owner[i] == Owner.none else { return false }
            visited[i] = mark
            owner[i] = claimant
            role[i] = kind
            parent[i] = referencing
            if kind != 2 { depth[i] = UInt8(pageDepth) }
            reachMark[i] = reread
            added.append(page)
            return true
        }

        while let (page, pageDepth, referencing) = stack.popLast() {
            guard pageDepth <= 40 else { return fail() }
            let links = links(of: page)
            guard links.isValidType, links.damage == nil, links.isTable == expectTable,
                  take(page, role: links.isInterior ? 0 : 1, from: referencing, depth: pageDepth) else { return fail() }
            for child in links.children.reversed() {
                let c = Int(child)
                if inRange(child), owner[c] == claimant, role[c] != 2,
                   parent[c] == page || dirtyMark[Int(parent[c])] == pass {
                    // An unchanged subtree: kept whole, once.
                    guard reachMark[c] != kept, Int(depth[c]) == pageDepth + 1 else { return fail() }
                    reachMark[c] = kept
                    parent[c] = page
                } else {
                    stack.append((child, pageDepth + 1, page))
                }
            }
            for chain in links.overflows {
                var current = chain.firstPage
                for step in 0..<chain.pageCount {
                    guard take(current, role: 2, from: page, depth: 0) else { return fail() }
                    nextOverflow[Int(current)] = 0
                    guard step + 1 < chain.pageCount else { break }
                    let next = withPage(current) { BTreePage.u32($0, 0) ?? 0 }
                    guard next != 0 else { return fail() }
                    nextOverflow[Int(current)] = next
                    current = next
                }
            }
        }

        // The old subtrees below the marked pages that nothing keeps: their pages are unchanged,
        // so their links (cached) are the old ones.
        var drop: [UInt32] = []
        for page in marked {
            guard let links = linksBefore(page) else { return fail() }
            for child in links.children {
                let c = Int(child)
                if inRange(child), owner[c] == claimant, role[c] != 2, reachMark[c] != kept, reachMark[c] != reread {
                    drop.append(child)
                }
            }
        }
        while let page = drop.popLast() {
            let i = Int(page)
            guard owner[i] == claimant, reachMark[i] != kept, reachMark[i] != reread else { continue }
            owner[i] = Owner.none
            let links = links(of: page)
            releaseOverflows(of: page, links: links, claimant: claimant)
            for child in links.children where inRange(child) && parent[Int(child)] == page { drop.append(child) }
        }
    }

    /// The tables and indexes `sqlite_schema` lists with a root page, read from its leaf pages.
    private func readSchemaObjects() -> [DatabaseObject] {
        var objects: [DatabaseObject] = []
        let leafPages = trees[0].pages.filter { role[Int($0)] == 1 && owner[Int($0)] == 0 }.sorted()
        let geometry = geometry
        for page in leafPages {
            for payload in schemaPayloads(of: page, geometry: geometry) {
                guard let record = SchemaRecord.decode(payload, textEncoding: textEncoding) else {
                    schemaProblems.append(BTreeProblem(structure: DatabaseObject.schema.name, page: page,
                                                       detail: "a schema record cannot be decoded"))
                    continue
                }
                guard record.type == "table" || record.type == "index", record.rootPage > 0 else { continue }
                guard record.rootPage <= Int64(UInt32.max) else {
                    schemaProblems.append(BTreeProblem(structure: record.name, page: page,
                                                       detail: "its root page \(record.rootPage) is impossible"))
                    continue
                }
                objects.append(DatabaseObject(type: record.type, name: record.name, tableName: record.tableName,
                                              rootPage: UInt32(record.rootPage)))
            }
        }
        return objects
    }

    /// The payloads of a schema leaf page's cells, with overflow tails
    /// gathered (each bounded to 1 MiB: enough for the four columns needed).
    private func schemaPayloads(of page: UInt32, geometry: BTreePage.Geometry) -> [[UInt8]] {
        let limit = 1 << 20
        let usable = geometry.usableSize
        var payloads: [[UInt8]] = []
        var chains: [(bytes: [UInt8], next: UInt32, remaining: Int)] = []
        withPage(page) { raw in
            let headerOffset = page == 1 ? 100 : 0
            guard raw.count > headerOffset, raw[headerOffset] == BTreePage.leafTable,
                  let count = BTreePage.u16(raw, headerOffset + 3) else { return }
            for index in 0..<count {
                guard let cell = BTreePage.u16(raw, headerOffset + 8 + 2 * index), cell < usable,
                      let size = BTreePage.varint(raw, cell, limit: usable),
                      let rowid = BTreePage.varint(raw, cell + size.length, limit: usable) else { continue }
                let body = cell + size.length + rowid.length
                let payload = Int(min(size.value, UInt64(Int32.max)))
                let local = geometry.localSize(payload: payload, table: true)
                guard body + local <= min(usable, raw.count) else { continue }
                var bytes = [UInt8](UnsafeRawBufferPointer(rebasing: raw[body ..< body + min(local, limit)]))
                if payload > local, let next = BTreePage.u32(raw, body + local) {
                    chains.append((bytes, next, min(payload, limit) - bytes.count))
                    bytes = []
                } else {
                    payloads.append(bytes)
                }
            }
        }
        for chain in chains {
            var bytes = chain.bytes
            var next = chain.next
            var remaining = chain.remaining
            var steps = 0
            while remaining > 0, next != 0, inRange(next), steps <= pageCount {
                steps += 1
                next = withPage(next) { raw -> UInt32 in
                    let take = min(remaining, usable - 4, max(0, raw.count - 4))
                    if take > 0 { bytes += UnsafeRawBufferPointer(rebasing: raw[4 ..< 4 + take]) }
                    remaining -= take
                    return BTreePage.u32(raw, 0) ?? 0
                }
            }
            payloads.append(bytes)
        }
        return payloads
    }

    // MARK: - Freelist, pointer map, lock byte

    private func clearFreelist() {
        for page in freelistPages where Int(page) < owner.count
            && (owner[Int(page)] == Owner.freelistTrunk || owner[Int(page)] == Owner.freelistLeaf) {
            owner[Int(page)] = Owner.none
        }
        freelistPages = []
        freelistProblems = []
    }

    private func rebuildFreelist() {
        clearFreelist()
        guard pageCount >= 1 else { return }
        let (first, total) = withPage(1) { (BTreePage.u32($0, 32) ?? 0, BTreePage.u32($0, 36) ?? 0) }
        var problems: [BTreeProblem] = []
        var trunk = first
        var from: UInt32 = 1
        var found = 0
        let maxLeaves = geometry.usableSize / 4 - 2
        var steps = 0
        while trunk != 0 {
            steps += 1
            guard inRange(trunk), steps <= pageCount else {
                problems.append(BTreeProblem(structure: "freelist", page: from,
                                             detail: "it points to trunk page \(trunk), outside the \(pageCount)-page database"))
                break
            }
            guard claim(trunk, by: Owner.freelistTrunk, structure: "freelist", problems: &problems) else { break }
            freelistPages.append(trunk)
            found += 1
            let (next, leaves) = withPage(trunk) { raw -> (UInt32, [UInt32]) in
                let next = BTreePage.u32(raw, 0) ?? 0
                let count = Int(BTreePage.u32(raw, 4) ?? 0)
                guard count <= maxLeaves else { return (next, []) }
                return (next, (0..<count).map { BTreePage.u32(raw, 8 + 4 * $0) ?? 0 })
            }
            if leaves.isEmpty, withPage(trunk, { Int(BTreePage.u32($0, 4) ?? 0) }) > maxLeaves {
                problems.append(BTreeProblem(structure: "freelist", page: trunk, detail: "the trunk lists more leaves than fit"))
            }
            for leaf in leaves {
                guard inRange(leaf) else {
                    problems.append(BTreeProblem(structure: "freelist", page: trunk,
                                                 detail: "it lists page \(leaf), outside the \(pageCount)-page database"))
                    continue
                }
                if claim(leaf, by: Owner.freelistLeaf, structure: "freelist", problems: &problems) {
                    freelistPages.append(leaf)
                    found += 1
                }
            }
            from = trunk
            trunk = next
        }
        if found != Int(total), problems.isEmpty {
            problems.append(BTreeProblem(structure: "freelist", page: 1,
                                         detail: "the header counts \(total) free pages but the freelist holds \(found)"))
        }
        freelistProblems = problems
    }

    private var lockBytePage: Int { 1_073_741_824 / pageSize + 1 }

    private func clearReserved() {
        for page in reservedPages where Int(page) < owner.count
            && (owner[Int(page)] == Owner.pointerMap || owner[Int(page)] == Owner.lockByte) {
            owner[Int(page)] = Owner.none
        }
        reservedPages = []
        reservedProblems = []
    }

    /// Marks the pointer-map pages (auto-vacuum only) and the lock-byte page, whose places are fixed.
    private func rebuildReserved() {
        var problems: [BTreeProblem] = []
        if lockBytePage <= pageCount,
           claim(UInt32(lockBytePage), by: Owner.lockByte, structure: "lock-byte page", problems: &problems) {
            reservedPages.append(UInt32(lockBytePage))
        }
        if autoVacuum {
            let perMap = geometry.usableSize / 5 + 1
            var page = 2
            while page <= pageCount {
                let mapPage = page == lockBytePage ? page + 1 : page
                if mapPage <= pageCount,
                   claim(UInt32(mapPage), by: Owner.pointerMap, structure: "pointer map", problems: &problems) {
                    reservedPages.append(UInt32(mapPage))
                }
                page += perMap
            }
        }
        reservedProblems = problems
    }
}
