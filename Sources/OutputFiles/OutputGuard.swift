import Acquisition
import Foundation
import StoreFormats

/// The one check every output path passes before a command does any work: nothing storelens
/// writes may land on evidence, on another name for it, or inside it.
///
/// Paths are compared by what they are, not how they are spelt: device and inode after
/// following symlinks (so a symlink, a hard link, `./x` or `dir/../x` are all the same file),
/// and a file that does not exist yet by the device and inode of the folder it would be made in.
public enum OutputGuard {
    /// What an output option names: a file storelens creates or appends to, or a folder it
    /// creates files in (`repair --backup`).
    public enum Kind: Sendable { case file, folder }

    /// One output path and the option that gave it, for the message.
    public struct Output: Sendable {
        public let option: String
        public let path: String
        public let kind: Kind
        public init(option: String, path: String, kind: Kind = .file) {
            self.option = option
            self.path = path
            self.kind = kind
        }
    }

    /// The names a store's files take beside it; a new file with one of these suffixes beside an
    /// input would be read as part of that store's family (or another's) the next time.
    static let sidecarSuffixes = ["-wal", "-shm", "-journal"]

    /// Refuses (throws) when any of `outputs` is, or resolves to, a file of any input's store
    /// family (main file, `-wal`, `-shm`, `-journal`, `.<name>_SUPPORT/`), an input file itself
    /// (store, archive, manifest, model), or would be created inside an input folder or with a
    /// sidecar-like name beside an input file. `-` (stdout) is never refused.
    public static func check(_ outputs: [Output], inputs: [String]) throws(OutputPathError) {
        let evidence = Evidence(inputs: inputs)
        for output in outputs where output.path != "-" && !output.path.isEmpty {
            try evidence.check(output)
        }
    }

    /// Refuses (throws) an output folder that is, or would be made inside, one of `folders`: the
    /// folders given with `--each`, whose entries are the inputs. A folder of reports made there
    /// would be read as an input by the next run over the same folder. Compared by identity, so
    /// any spelling of the folder counts.
    public static func checkOutside(_ outputs: [Output], folders: [String]) throws(OutputPathError) {
        var identities: [Identity: String] = [:]
        for folder in folders {
            var st = stat()
            if stat(folder, &st) == 0, st.st_mode & S_IFMT == S_IFDIR { identities[Identity(st)] = folder }
        }
        guard !identities.isEmpty else { return }
        for output in outputs where output.kind == .folder && output.path != "-" && !output.path.isEmpty {
            var url = URL(fileURLWithPath: Evidence.resolved(output.path))
            while true {
                if let id = Identity(path: url.path), let folder = identities[id] {
                    throw .inFolderOfInputs(option: output.option, path: output.path, folder: folder)
                }
                if url.path == "/" || url.path.isEmpty { break }
                url.deleteLastPathComponent()
            }
        }
    }

    /// Device and inode: what a path is, whatever its name.
    struct Identity: Hashable {
        let device: UInt64
        let inode: UInt64
        init(_ st: stat) {
            device = UInt64(bitPattern: Int64(st.st_dev))
            inode = UInt64(st.st_ino)
        }
        /// The identity of what `path` names after following symlinks, or nil when nothing is there.
        init?(path: String) {
            var st = stat()
            guard stat(path, &st) == 0 else { return nil }
            self.init(st)
        }
    }

    /// What the inputs are, gathered once.
    struct Evidence {
        /// Every existing evidence file (each input file and its family's files), and what to call it.
        var files: [Identity: String] = [:]
        /// Folders whose whole tree is evidence (input folders and support folders): where each
        /// is and what to call it.
        var trees: [Identity: (root: String, label: String)] = [:]
        /// Folders holding an input file: no sidecar-like or family name may be created in them.
        /// The value lists the input files there, by name.
        var besides: [Identity: [String]] = [:]

        init(inputs: [String]) {
            for input in inputs {
                var st = stat()
                guard stat(input, &st) == 0 else { continue }
                if st.st_mode & S_IFMT == S_IFDIR {
                    // Walked by its real path: an enumerator does not descend into a symlink.
                    trees[Identity(st)] = (Self.resolved(input), input)
                    continue
                }
                files[Identity(st)] = "the input \(input)"
                // The store family of a file input: the same rules StoreFamily uses to find it.
                let main = URL(fileURLWithPath: input)
                let family = StoreFamily.beside(main)
                for (url, what) in [(family.wal, "the -wal"), (family.shm, "the -shm"), (family.journal, "the -journal")] {
                    if let url, let id = Identity(path: url.path) { files[id] = "\(what) of \(input)" }
                }
                if let support = family.supportFolder, let id = Identity(path: support.path) {
                    trees[id] = (Self.resolved(support.path), "the support folder of \(input)")
                }
                // An input reached through a symlink lives beside its target: take both folders.
                let names = [main.lastPathComponent, URL(fileURLWithPath: Self.resolved(input)).lastPathComponent]
                for folder in [main.deletingLastPathComponent().path, URL(fileURLWithPath: Self.resolved(input)).deletingLastPathComponent().path] {
                    if let id = Identity(path: folder) { besides[id, default: []].append(contentsOf: names) }
                }
            }
        }

        func check(_ output: Output) throws(OutputPathError) {
            let target = Self.resolved(output.path)
            var st = stat()
            let exists = stat(target, &st) == 0
            let isFolder = exists && st.st_mode & S_IFMT == S_IFDIR
            // An existing file: is it evidence under any name?
            if exists {
                if let what = files[Identity(st)] {
                    throw .isEvidence(option: output.option, path: output.path, evidence: what)
                }
                // A hard link made elsewhere to a file inside an input folder has no path in
                // common with it: only its inode tells.
                if !isFolder, st.st_nlink > 1, let tree = treeHolding(Identity(st)) {
                    throw .isEvidence(option: output.option, path: output.path, evidence: "a file inside \(tree)")
                }
            }
            // Every name on the way counts as well as what it resolves to: a `-wal` beside the store
            // that is a folder, a FIFO or a link to /dev/zero is still the family's name, also when
            // the output is a link to it.
            for hop in Self.hops(output.path) { try checkName(output, path: hop) }
            if isFolder {
                if let tree = tree(containing: target, includingSelf: true) {
                    throw .insideEvidence(option: output.option, path: output.path, folder: tree)
                }
                if output.kind == .folder, let id = Identity(path: target), let names = besides[id] {
                    throw .folderOfEvidence(option: output.option, path: output.path, input: names[0])
                }
                return
            }
            try checkName(output, path: target)
        }

        /// The rules for a name, existing or not: not inside an evidence tree, and not a family or
        /// sidecar-like name beside an input file.
        func checkName(_ output: Output, path target: String) throws(OutputPathError) {
            let parent = URL(fileURLWithPath: target).deletingLastPathComponent().path
            let name = URL(fileURLWithPath: target).lastPathComponent
            if let tree = tree(containing: parent, includingSelf: true) {
                throw .insideEvidence(option: output.option, path: output.path, folder: tree)
            }
            if let id = Identity(path: parent), let inputs = besides[id] {
                let familyNames = inputs.flatMap { main in [main] + sidecarSuffixes.map { main + $0 } }
                let sidecarLike = sidecarSuffixes.contains { name.hasSuffix($0) } || name.hasSuffix("_SUPPORT")
                if familyNames.contains(name) || sidecarLike {
                    throw .besideEvidence(option: output.option, path: output.path, input: inputs[0])
                }
            }
        }

        /// The evidence tree `path` (a folder) is in, walking up by identity so that any name for
        /// the folder counts.
        func tree(containing path: String, includingSelf: Bool) -> String? {
            guard !trees.isEmpty else { return nil }
            var url = URL(fileURLWithPath: Self.resolved(path))
            if !includingSelf { url.deleteLastPathComponent() }
            while true {
                if let id = Identity(path: url.path), let tree = trees[id] { return tree.label }
                if url.path == "/" || url.path.isEmpty { return nil }
                url.deleteLastPathComponent()
            }
        }

        /// The evidence tree holding a file with this identity (walks the trees; called only for
        /// an existing output with more than one link).
        func treeHolding(_ identity: Identity) -> String? {
            for (_, tree) in trees {
                guard let walker = FileManager.default.enumerator(atPath: tree.root) else { continue }
                while let relative = walker.nextObject() as? String {
                    var st = stat()
                    if lstat(tree.root + "/" + relative, &st) == 0, Identity(st) == identity { return tree.label }
                }
            }
            return nil
        }

        /// Each name a symlink chain from `path` passes through, folders resolved.
        static func hops(_ path: String) -> [String] { chain(path).map(resolvedParent) }

        /// The names a symlink chain from `path` passes through, as written (at most 40 links,
        /// like the kernel's own limit), `path` first.
        static func chain(_ path: String) -> [String] {
            var current = path.isEmpty ? "." : path
            var names = [current]
            for _ in 0..<40 {
                var st = stat()
                guard lstat(current, &st) == 0, st.st_mode & S_IFMT == S_IFLNK,
                      let target = try? FileManager.default.destinationOfSymbolicLink(atPath: current) else { break }
                current = target.hasPrefix("/") ? target
                    : URL(fileURLWithPath: current).deletingLastPathComponent().appendingPathComponent(target).path
                names.append(current)
            }
            return names
        }

        /// `path` with the symlinks of its folder followed, the last component as given.
        static func resolvedParent(_ path: String) -> String {
            let url = URL(fileURLWithPath: path.isEmpty ? "." : path)
            guard let real = realpath(url.deletingLastPathComponent().path, nil) else { return url.standardizedFileURL.path }
            defer { free(real) }
            let folder = String(cString: real)
            return (folder == "/" ? "" : folder) + "/" + url.lastPathComponent
        }

        /// `path` with every symlink on the way followed, also a dangling last one (a new file
        /// would be created where it points). Paths that do not exist yet keep their last part.
        static func resolved(_ path: String) -> String { resolvedParent(chain(path).last ?? path) }
    }
}

/// An output path that would write onto or into evidence.
public enum OutputPathError: Error, Equatable, CustomStringConvertible, Sendable {
    /// The output is an input file or a file of an input's store family (under some name).
    case isEvidence(option: String, path: String, evidence: String)
    /// The output would be created inside an input folder (a container, backup, support folder).
    case insideEvidence(option: String, path: String, folder: String)
    /// The output would be created beside an input store with a name SQLite or storelens would
    /// take for part of a store family (`-wal`, `-shm`, `-journal`, `_SUPPORT`).
    case besideEvidence(option: String, path: String, input: String)
    /// An output folder is the folder an input store is in: the files made there would sit
    /// beside the evidence, under its family's names.
    case folderOfEvidence(option: String, path: String, input: String)
    /// An output folder is, or is inside, a folder given with `--each`: every entry there is an input.
    case inFolderOfInputs(option: String, path: String, folder: String)

    public var description: String {
        switch self {
        case .isEvidence(let option, let path, let evidence) where evidence == "the input \(path)":
            return "\(option) \(path) is one of the inputs, and storelens never writes to evidence; give \(option) another path."
        case .isEvidence(let option, let path, let evidence):
            return "\(option) \(path) is \(evidence) (the same file), and storelens never writes to evidence; give \(option) a path outside the input's folder."
        case .insideEvidence(let option, let path, let folder):
            return "\(option) \(path) is inside the input \(folder), and storelens never writes into evidence; give \(option) a path outside it."
        case .besideEvidence(let option, let path, let input):
            return "\(option) \(path) would be made beside the input \(input) with a name that belongs to a store's family (-wal, -shm, -journal, _SUPPORT), and storelens never writes into evidence; give \(option) another name or folder."
        case .folderOfEvidence(let option, let path, let input):
            return "\(option) \(path) is the folder the input \(input) is in, and storelens never writes beside evidence; give \(option) another folder."
        case .inFolderOfInputs(let option, let path, let folder):
            return "\(option) \(path) is inside \(folder), the folder given with --each whose every entry is an input, and storelens never writes among the inputs (the next run would read what it wrote as one); give \(option) a folder outside it."
        }
    }
}

extension OutputPathError: DescribedError {
    public var errorClass: ErrorClass { .input }
}
