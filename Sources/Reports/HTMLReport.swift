import Acquisition
import Coexistence
import CoreDataStore
import Findings
import Foundation
import Operations
import StoreFormats
import WALForensics

/// The self-contained HTML view of a `ReportDocument`: one file, no network requests (a CSP
/// forbids them), CSS and a small script inline, inline SVG charts, lists capped with a note.
public enum HTMLReport {
    public static let contentSecurityPolicy = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"

    public static func render(_ d: ReportDocument) -> String {
        var w = HTMLWriter()
        let findings = d.allFindings
        let title = "storelens report: " + (d.inputs.map { URL(fileURLWithPath: $0).lastPathComponent }.joined(separator: ", "))
        w.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
        w.raw("<meta http-equiv=\"Content-Security-Policy\" content=\"\(contentSecurityPolicy)\">\n")
        w.raw("<meta name=\"referrer\" content=\"no-referrer\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
        w.raw("<meta name=\"generator\" content=\"storelens \(HTML.escape(d.toolVersion))\">\n")
        w.element("title", text: title)
        w.raw("\n<style>\n\(css)</style>\n</head>\n<body>\n")

        header(&w, d, title: title, findings: findings)
        summary(&w, d)
        findingsSection(&w, findings, limit: d.limits.findings, notRun: d.stores.flatMap { s in s.problems.map { "\(s.path): \($0)" } })
        if let audit = d.audit { auditSection(&w, audit, manifest: d.manifestPath, limits: d.limits) }
        if let problem = d.auditProblem {
            w.raw("<section id=\"audit\">\n<h2>Audit against the manifest</h2>\n")
            w.element("p", ["class": "problem"], text: "The audit could not run: " + problem)
            w.raw("</section>\n")
        }
        if d.stores.count > d.limits.navigationStores { storeIndex(&w, d) }
        for (i, store) in d.stores.enumerated() { storeSection(&w, store, index: i, limits: d.limits) }
        repairSection(&w, d)
        evidenceSection(&w, d)

        w.raw("<footer><p>Written by storelens \(HTML.escape(d.toolVersion)). The originals were never opened by SQLite: storelens read private copies.</p></footer>\n")
        w.raw("<script>\n\(script)</script>\n</body>\n</html>\n")
        return w.out
    }

    // MARK: - Sections

    static func header(_ w: inout HTMLWriter, _ d: ReportDocument, title: String, findings: [Finding]) {
        w.raw("<header>\n")
        w.element("h1", text: title)
        w.raw("<dl class=\"facts\">")
        w.element("dt", text: "input")
        w.open("dd"); w.element("code", text: d.inputs.joined(separator: "\n")); w.close("dd")
        w.element("dt", text: "generated")
        w.element("dd", text: iso(d.generatedAt) + " by storelens " + d.toolVersion)
        w.element("dt", text: "command")
        w.open("dd"); w.element("code", text: d.commandLine); w.close("dd")
        if let m = d.manifestPath {
            w.element("dt", text: "manifest")
            w.open("dd"); w.element("code", text: m); w.close("dd")
        }
        w.element("dt", text: "evidence")
        w.element("dd", text: d.evidenceVerified
            ? "\(StoreFormats.plural(d.originals.count, "original file")) recorded before reading and verified unchanged afterwards"
            : "\(StoreFormats.plural(d.originals.count, "original file")) recorded before reading")
        w.raw("</dl>\n<p id=\"counts\">")
        for s in Finding.Severity.allCases.reversed() {
            let n = findings.filter { $0.severity == s }.count
            w.element("span", ["class": "badge sev-\(s.rawValue)"], text: "\(HTML.number(n)) \(s.rawValue)")
            w.raw(" ")
        }
        w.raw("</p>\n<nav><a href=\"#summary\">Summary</a> <a href=\"#findings\">Findings</a>")
        if d.audit != nil || d.auditProblem != nil { w.raw(" <a href=\"#audit\">Audit</a>") }
        if d.stores.count <= d.limits.navigationStores {
            for i in d.stores.indices { w.raw(" <a href=\"#store-\(i + 1)\">Store \(i + 1)</a>") }
        } else {
            w.raw(" <a href=\"#stores\">Stores (\(HTML.number(d.stores.count)))</a>")
        }
        w.raw(" <a href=\"#repair\">Repair plan</a> <a href=\"#evidence\">Evidence</a></nav>\n</header>\n")
    }

    static func summary(_ w: inout HTMLWriter, _ d: ReportDocument) {
        w.raw("<section id=\"summary\">\n<h2>Summary</h2>\n")
        if d.stores.isEmpty {
            w.raw("<p>No SQLite store was found in the input.</p>\n")
        } else {
            var rows: [[String]] = []
            let all = d.allFindings
            for s in d.stores {
                let i = s.inspection
                let userEntities = i?.entities.filter { $0.entity.kind == .user } ?? []
                let records = userEntities.reduce(0) { $0 + $1.counts.rows }
                let own = all.filter { $0.store == s.path }
                let counts = Finding.Severity.allCases.reversed().map { sev in "\(own.filter { $0.severity == sev }.count) \(sev.rawValue)" }
                rows.append([
                    s.path,
                    i.map { $0.format == .coreData ? "Core Data store by \(stackName($0.stack.stack))" : "SQLite (not Core Data)" } ?? "not read",
                    i.map { $0.format == .coreData ? HTML.number(userEntities.count) : HTML.number($0.tables.count) + " tables" } ?? "-",
                    i.map { $0.format == .coreData ? HTML.number(records) : HTML.number($0.tables.reduce(0) { $0 + $1.rows }) } ?? "-",
                    walLine(s),
                    historyLine(s),
                    counts.joined(separator: ", "),
                ])
            }
            w.table(["store", "format and stack", "entities", "records", "WAL", "history", "findings"], rows, numeric: [2, 3])
        }
        for inv in d.inventories {
            if let target = inv.linkTarget {
                w.element("p", ["class": "muted"], text: "\(inv.input) is a symbolic link to \(target), followed because it was given on the command line.")
            }
            if let damage = inv.damage {
                w.open("p", ["class": "problem"]); w.text("\(inv.input): \(damage)"); w.close("p")
            }
        }
        w.raw("</section>\n")
    }

    /// - Parameter notRun: parts of the reading that could not run; with them, no findings does
    ///   not mean a clean store, and the section says so instead of "No findings".
    static func findingsSection(_ w: inout HTMLWriter, _ findings: [Finding], limit: Int, notRun: [String] = []) {
        w.raw("<section id=\"findings\">\n<h2>Findings</h2>\n")
        w.raw("""
            <div class="controls"><label>Severity <select id="sev"><option value="all">all</option><option value="error">error</option>\
            <option value="warning">warning</option><option value="info">info</option></select></label>\
            <label>Search <input id="q" type="search" placeholder="id, entity, store, text" autocomplete="off"></label></div>
            <p id="finding-status" class="muted">\(plural(findings.count, "finding"))</p>

            """)
        if !notRun.isEmpty {
            w.element("p", ["class": "problem"],
                      text: "\(StoreFormats.plural(notRun.count, "part")) of the reading could not run, so the findings below are incomplete: " + notRun.prefix(5).joined(separator: " "))
        }
        if findings.isEmpty {
            w.raw(notRun.isEmpty ? "<p>No findings.</p>\n" : "<p>No findings from the parts that ran.</p>\n")
        } else {
            w.raw("<table id=\"finding-table\"><thead><tr><th>severity</th><th>finding</th><th>entity</th><th>store</th><th>what, why, what to do</th></tr></thead><tbody>\n")
            for f in findings.prefix(limit) {
                w.open("tr", ["class": "finding", "data-severity": f.severity.rawValue])
                w.open("td"); w.element("span", ["class": "badge sev-\(f.severity.rawValue)"], text: f.severity.rawValue); w.close("td")
                w.open("td"); w.element("code", text: f.id); w.close("td")
                w.element("td", text: f.entity ?? "")
                w.open("td"); w.element("code", text: f.store ?? ""); w.close("td")
                w.open("td")
                w.element("p", ["class": "msg"], text: f.message)
                if !f.evidence.isEmpty {
                    w.raw("<details><summary>evidence</summary><dl class=\"facts\">")
                    for (key, value) in f.evidence.sorted(by: { $0.key < $1.key }) {
                        w.element("dt", text: key)
                        w.element("dd", text: String(value.text.prefix(2000)))
                    }
                    w.raw("</dl></details>")
                }
                if !f.explanation.isEmpty { w.element("p", ["class": "why"], text: f.explanation) }
                if let s = f.suggestion { w.element("p", ["class": "todo"], text: "What to do: " + s) }
                w.close("td")
                w.raw("</tr>\n")
            }
            w.raw("</tbody></table>\n")
            w.raw(HTML.capNote(shown: limit, total: findings.count, what: "findings",
                               hint: "run the command with --format json for all of them."))
        }
        w.raw("</section>\n")
    }

    static func auditSection(_ w: inout HTMLWriter, _ r: AuditResult, manifest: String?, limits: ReportDocument.Limits) {
        w.raw("<section id=\"audit\">\n<h2>Audit against the manifest</h2>\n")
        w.element("h3", text: "Stacks")
        w.table(["stack", "kind", "bound to"], r.bindings.map { [$0.stack, $0.kind, $0.store ?? "not found in the input"] })
        w.element("h3", text: "Entities: records on each side and writers seen")
        let rows = r.entities.prefix(limits.listRows).map { e -> [String] in
            [e.current, e.legacy ?? "-", e.writer,
             e.sides.map { "\($0.stack): \(HTML.number($0.records)) (\($0.entity) in \($0.store))" }.joined(separator: "\n"),
             e.writersSeen.isEmpty ? "none in history"
                : e.writersSeen.map { "\($0.stack): \(plural($0.transactions, "transaction")), \(plural($0.changes, "change"))" }.joined(separator: "\n")]
        }
        w.table(["entity", "legacy name", "allowed writer", "records per side", "writers seen"], Array(rows), class: "pre")
        w.raw(HTML.capNote(shown: limits.listRows, total: r.entities.count, what: "entities", hint: "see `storelens audit --format json`."))
        let stacks = orderedUnique(r.entities.flatMap { $0.sides.map(\.stack) })
        let groups = r.entities.prefix(limits.chartEntities).map { e in
            (label: e.current, values: stacks.map { stack in e.sides.filter { $0.stack == stack }.reduce(0) { $0 + $1.records } })
        }
        if !groups.isEmpty && !stacks.isEmpty {
            w.element("h3", text: "Records per entity per side")
            w.raw(SVGChart.bars(groups: Array(groups), series: stacks, caption: "Records per entity on each stack's side"))
            w.raw(HTML.capNote(shown: limits.chartEntities, total: r.entities.count, what: "entities in the chart", hint: "the table above lists them all."))
        }
        w.raw("</section>\n")
    }

    /// Many stores (a simulator folder, a fleet of tickets): one index grouped by container, each
    /// group folded, the links capped like every other long list.
    static func storeIndex(_ w: inout HTMLWriter, _ d: ReportDocument) {
        w.raw("<section id=\"stores\">\n<h2>Stores</h2>\n")
        var groups: [(name: String, members: [Int])] = []
        var at: [String: Int] = [:]
        for (i, s) in d.stores.enumerated() {
            let c = s.found?.container
            let name = c.map { ($0.identifier ?? "container of unknown identity") + " (\($0.kind == .unknown ? "container" : $0.kind.rawValue))" } ?? "outside any container"
            if let g = at[name] { groups[g].members.append(i) } else { at[name] = groups.count; groups.append((name, [i])) }
        }
        w.element("p", ["class": "muted"], text: "\(HTML.number(d.stores.count)) stores in \(plural(groups.count, "group")).")
        var shown = 0
        for group in groups {
            guard shown < d.limits.listRows else { break }
            w.open("details"); w.open("summary"); w.text("\(group.name): \(StoreFormats.plural(group.members.count, "store"))"); w.close("summary")
            w.raw("<ul>")
            for i in group.members.prefix(d.limits.listRows - shown) {
                w.raw("<li><a href=\"#store-\(i + 1)\">Store \(i + 1)</a> "); w.element("code", text: d.stores[i].path); w.raw("</li>")
                shown += 1
            }
            w.raw("</ul>"); w.close("details"); w.raw("\n")
        }
        if shown < d.stores.count {
            w.element("p", ["class": "muted"], text: "\(HTML.number(d.stores.count - shown)) more stores are not listed here; each has its section below (search the page for its path).")
        }
        w.raw("</section>\n")
    }

    static func storeSection(_ w: inout HTMLWriter, _ s: ReportDocument.StoreSection, index: Int, limits: ReportDocument.Limits) {
        w.raw("<section id=\"store-\(index + 1)\" class=\"store\">\n")
        w.open("h2"); w.text("Store \(index + 1): "); w.element("code", text: s.path); w.close("h2")
        for p in s.problems { w.element("p", ["class": "problem"], text: p) }
        storeFacts(&w, s)
        if let i = s.inspection {
            if i.format == .coreData { entities(&w, s, i, limits: limits) } else { tables(&w, i, limits: limits) }
        }
        timeline(&w, s)
        walSection(&w, s, limits: limits)
        w.raw("</section>\n")
    }

    static func storeFacts(_ w: inout HTMLWriter, _ s: ReportDocument.StoreSection) {
        var facts: [(String, String)] = []
        if let i = s.inspection {
            facts.append(("format", i.format == .coreData ? "Core Data store" : "SQLite database (not Core Data)"))
            facts.append(("file", "\(i.journalMode) journal, \(i.pageSize)-byte pages, \(HTML.number(i.sizeBytes)) bytes"))
            if i.format == .coreData {
                facts.append(("written by", stackName(i.stack.stack) + " (most likely)"
                                + (i.stack.evidence.isEmpty ? "" : "\n" + i.stack.evidence.map { "– " + $0 }.joined(separator: "\n"))))
            }
            if let m = i.metadata {
                facts.append(("store UUID", m.uuid ?? "(none)"))
                facts.append(("framework", m.frameworkVersion.map(String.init) ?? "?"))
                facts.append(("model versions", m.modelVersionIdentifiers.map { "\"\($0)\"" }.joined(separator: ", ")))
                if let type = m.storeType { facts.append(("store type", type)) }
            }
            if !i.cloudKitTables.isEmpty { facts.append(("CloudKit", "\(i.cloudKitTables.count) mirroring tables")) }
            if let x = i.externalData { facts.append(("external data", InspectionReport.line(x))) }
            for note in i.notes { facts.append(("note", note)) }
        }
        facts.append(("WAL", walLine(s)))
        facts.append(("history", historyLine(s)))
        if let f = s.found {
            if let c = f.container { facts.append(("container", "\(c.kind.rawValue) \(c.identifier ?? "(no identifier)") (from \(c.source))")) }
            if let location = f.location { facts.append(("location", location)) }
            let sidecars = [f.sidecars.wal, f.sidecars.shm, f.sidecars.journal, f.sidecars.externalData].compactMap { $0 }
            facts.append(("sidecars", sidecars.isEmpty ? "none" : sidecars.joined(separator: "\n")))
        }
        w.raw("<dl class=\"facts card\">")
        for (k, v) in facts { w.element("dt", text: k); w.element("dd", text: v) }
        w.raw("</dl>\n")
    }

    static func entities(_ w: inout HTMLWriter, _ s: ReportDocument.StoreSection, _ i: StoreInspection, limits: ReportDocument.Limits) {
        w.element("h3", text: "Entities: rows in the main file and with the WAL applied, writers seen")
        let writers = Dictionary(s.entityWriters.map { ($0.entityNumber, $0) }, uniquingKeysWith: { a, _ in a })
        var rows: [[String]] = []
        for e in i.entities.prefix(limits.listRows) {
            let main = e.counts.rowsMainFileOnly
            let delta = main.map { e.counts.rows - $0 }
            let seen = writers[e.entity.number]?.writers.map { wr -> String in
                let who = [wr.bundleID, wr.processName == wr.bundleID ? nil : wr.processName, wr.author.map { "author \($0)" },
                           wr.contextName.map { "context \($0)" }].compactMap { $0 }.joined(separator: " · ")
                return "\(who.isEmpty ? "unknown writer" : who): \(HTML.number(wr.inserts)) ins, \(HTML.number(wr.updates)) upd, \(HTML.number(wr.deletes)) del"
            }.joined(separator: "\n") ?? ""
            rows.append([String(e.entity.number), e.entity.name, e.entity.parentName ?? "-",
                         e.entity.tableExists ? e.entity.table : "(missing)",
                         main.map(HTML.number) ?? "-", HTML.number(e.counts.rows),
                         delta.map { $0 == 0 ? "0" : ($0 > 0 ? "+" : "−") + HTML.number(abs($0)) } ?? "-",
                         e.counts.maxPK.map(HTML.number) ?? "-", e.entity.zMax.map(HTML.number) ?? "-",
                         seen.isEmpty ? (e.entity.kind == .user ? "none in history" : "") : seen])
        }
        w.table(["Z_ENT", "entity", "parent", "table", "main file", "with WAL", "WAL change", "max PK", "Z_MAX", "writers seen (history)"],
                rows, numeric: [0, 4, 5, 6, 7, 8], class: "pre")
        w.raw(HTML.capNote(shown: limits.listRows, total: i.entities.count, what: "entities", hint: "see `storelens inspect --format json`."))
        let user = i.entities.filter { $0.entity.kind == .user }
        if !user.isEmpty {
            let groups = user.prefix(limits.chartEntities).map { e in
                (label: e.entity.name, values: [e.counts.rowsMainFileOnly ?? 0, e.counts.rows])
            }
            w.element("h3", text: "Records per entity: main file and with the WAL applied")
            w.raw(SVGChart.bars(groups: Array(groups), series: ["main file", "with WAL"], caption: "Rows per entity in " + s.path))
            w.raw(HTML.capNote(shown: limits.chartEntities, total: user.count, what: "entities in the chart", hint: "the table above lists them all."))
        }
    }

    static func tables(_ w: inout HTMLWriter, _ i: StoreInspection, limits: ReportDocument.Limits) {
        w.element("h3", text: "Tables")
        w.table(["table", "main file", "with WAL"],
                i.tables.prefix(limits.listRows).map { [$0.name, $0.rowsMainFileOnly.map(HTML.number) ?? "-", HTML.number($0.rows)] },
                numeric: [1, 2])
        w.raw(HTML.capNote(shown: limits.listRows, total: i.tables.count, what: "tables", hint: "see `storelens inspect --format json`."))
    }

    static func timeline(_ w: inout HTMLWriter, _ s: ReportDocument.StoreSection) {
        guard let t = s.timeline, t.transactions > 0 else { return }
        w.element("h3", text: "History: transactions per writer over time")
        w.raw(SVGChart.timeline(t, caption: "History transactions per writer in " + s.path))
        if t.otherWriters > 0 {
            w.element("p", ["class": "cap"], text: "The last lane sums \(t.otherWriters) less active writers; see `storelens history --summary`.")
        }
    }

    static func walSection(_ w: inout HTMLWriter, _ s: ReportDocument.StoreSection, limits: ReportDocument.Limits) {
        guard let a = s.wal, let wal = a.wal else { return }
        w.element("h3", text: "WAL transactions")
        var facts: [(String, String)] = [
            ("frames", "\(HTML.number(wal.validFrames)) of \(HTML.number(wal.frames)) valid, \(HTML.number(wal.fileBytes)) bytes"),
            ("commits", "\(HTML.number(wal.commits)), last commit at frame \(HTML.number(wal.lastCommitFrame))"),
        ]
        if wal.uncommittedFrames > 0 { facts.append(("uncommitted", "\(HTML.number(wal.uncommittedFrames)) frames after the last commit (SQLite ignores them)")) }
        if wal.staleFrames > 0 { facts.append(("stale", "\(HTML.number(wal.staleFrames)) frames of an earlier WAL generation")) }
        if let s1 = wal.salt1, let s2 = wal.salt2 { facts.append(("salts", String(format: "0x%08x 0x%08x", s1, s2))) }
        if let reason = wal.stopReason { facts.append(("stopped", reason)) }
        if let problem = wal.headerProblem { facts.append(("header", problem)) }
        if let shm = a.shm {
            facts.append(("-shm", shm.valid ? (shm.agreesWithWal ? "valid, agrees with the WAL" : "valid, but does not agree with the WAL (stale)") : "not valid"))
        }
        w.raw("<dl class=\"facts card\">")
        for (k, v) in facts { w.element("dt", text: k); w.element("dd", text: v) }
        w.raw("</dl>\n")
        guard !a.transactions.isEmpty else { return }
        let rows = a.transactions.prefix(limits.listRows).map { t -> [String] in
            [String(t.number), "\(t.firstFrame)–\(t.commitFrame)", HTML.number(t.pages.count), HTML.number(t.databaseSizeInPages),
             (t.entities.isEmpty ? t.tables : t.entities).joined(separator: ", ")
                + (t.otherPages.isEmpty ? "" : " (+ " + t.otherPages.map { "\($0.count) \($0.use)" }.joined(separator: ", ") + ")")]
        }
        w.table(["commit", "frames", "pages", "db pages after", "entities (tables) written"], Array(rows), numeric: [0, 2, 3])
        w.raw(HTML.capNote(shown: limits.listRows, total: a.transactions.count, what: "WAL transactions",
                           hint: "see `storelens wal --format json` for every one."))
    }

    static func repairSection(_ w: inout HTMLWriter, _ d: ReportDocument) {
        w.raw("<section id=\"repair\">\n<h2>Repair plan</h2>\n")
        if let plan = d.repairPlan, !plan.steps.isEmpty {
            w.raw("<ol class=\"plan\">")
            for step in plan.steps {
                w.raw("<li>")
                w.element("strong", text: step.title)
                w.raw(" <span class=\"muted\">in</span> ")
                w.element("code", text: step.store)
                w.element("p", text: step.detail)
                if !step.resolves.isEmpty { w.element("p", ["class": "muted"], text: "resolves: " + step.resolves.joined(separator: ", ")) }
                w.raw("</li>")
            }
            w.raw("</ol>\n")
            if let note = plan.note { w.element("p", ["class": "muted"], text: note) }
            if let note = d.repairPlanNote { w.element("p", ["class": "muted"], text: note) }
        } else {
            w.element("p", ["class": "muted"], text: d.repairPlanNote ?? "No finding of the checks has an automatic repair; each finding says what to do.")
        }
        w.raw("</section>\n")
    }

    static func evidenceSection(_ w: inout HTMLWriter, _ d: ReportDocument) {
        w.raw("<section id=\"evidence\">\n<h2>Evidence</h2>\n")
        w.element("h3", text: "Inputs")
        w.table(["input", "kind", "SHA-256", "warnings"], d.inventories.map {
            [$0.input, $0.kind.rawValue, $0.inputSHA256 ?? "(a folder: its files are listed below)",
             ($0.warnings + [$0.damage].compactMap { $0 }).joined(separator: "\n")]
        }, class: "pre mono-3")
        w.element("h3", text: "Original files, hashed before reading")
        let limit = d.limits.listRows
        w.table(["file", "bytes", "SHA-256"], d.originals.prefix(limit).map { [$0.path, HTML.number($0.size), $0.sha256 ?? "(identity only: inode, size, times)"] },
                numeric: [1], class: "mono-3")
        w.raw(HTML.capNote(shown: limit, total: d.originals.count, what: "original files", hint: "`storelens scan --evidence FILE` writes every hash."))
        let extracted = d.inventories.flatMap { inv in inv.extracted.map { (inv.input + "!" + $0.path, $0.sha256) } }
        if !extracted.isEmpty {
            w.element("h3", text: "Files extracted from archives")
            w.table(["file in the archive", "SHA-256"], extracted.prefix(limit).map { [$0.0, $0.1] }, class: "mono-2")
            w.raw(HTML.capNote(shown: limit, total: extracted.count, what: "extracted files", hint: "`storelens scan --evidence FILE` writes every hash."))
        }
        w.raw("</section>\n")
    }

    // MARK: - Lines shared by the summary and the store sections

    static func walLine(_ s: ReportDocument.StoreSection) -> String {
        if let wal = s.wal?.wal {
            var line = "\(plural(wal.commits, "commit")), \(HTML.number(wal.validFrames)) of \(HTML.number(wal.frames)) frames valid"
            if wal.uncommittedFrames > 0 { line += ", \(HTML.number(wal.uncommittedFrames)) uncommitted" }
            return line
        }
        if let w = s.inspection?.wal, w.present {
            return "\(plural(w.commits, "commit")), \(HTML.number(w.validFrames)) of \(HTML.number(w.frames)) frames valid"
        }
        return "none"
    }

    static func historyLine(_ s: ReportDocument.StoreSection) -> String {
        guard let h = s.inspection?.history, h.present else {
            return s.inspection?.format == .coreData ? "not tracked" : "-"
        }
        var line = "\(plural(h.transactions, "transaction")), \(plural(h.changes, "change"))"
        if let t = s.timeline, let first = t.firstSeconds, let last = t.lastSeconds {
            line += ", \(DisplayZone.current.iso8601(referenceSeconds: first)) to \(DisplayZone.current.iso8601(referenceSeconds: last))"
        }
        return line
    }

    static func stackName(_ stack: StackVerdict.Stack) -> String {
        switch stack {
        case .swiftData: return "SwiftData"
        case .coreData: return "Core Data (Xcode model)"
        case .unknown: return "an undetermined stack"
        }
    }

    static func iso(_ date: Date) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        f.timeZone = DisplayZone.current.zone ?? TimeZone(secondsFromGMT: 0)
        return f.string(from: date)
    }

    /// `plural` with the number grouped as the rest of the page writes numbers.
    static func plural(_ n: Int, _ word: String) -> String { StoreFormats.plural(n, word, formatted: HTML.number) }

    static func orderedUnique(_ items: [String]) -> [String] {
        var seen = Set<String>()
        return items.filter { seen.insert($0).inserted }
    }

    // MARK: - Style and script

    static let css = """
        :root{--fg:#1d1d1f;--muted:#5f6368;--line:#d2d2d7;--head:#f5f5f7;--bg:#fff;--err:#b3261e;--warn:#9a5b00;--info:#0b57d0}
        *{box-sizing:border-box}
        body{font:14px/1.45 -apple-system,system-ui,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:1240px;padding:16px 24px}
        h1{font-size:22px;margin:8px 0}h2{font-size:18px;border-bottom:2px solid var(--line);padding-bottom:4px;margin-top:36px}h3{font-size:15px;margin:20px 0 6px}
        table{border-collapse:collapse;width:100%;margin:6px 0 14px;font-size:13px}
        th,td{border-bottom:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top;overflow-wrap:anywhere}
        th{background:var(--head);font-weight:600;white-space:nowrap}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
        table.pre td{white-space:pre-line}table.pre td.n{white-space:nowrap}#summary td:first-child{min-width:14em}.mono-3 td:nth-child(3),.mono-2 td:nth-child(2){font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
        code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}
        #finding-table td:nth-child(-n+2),#finding-table td:nth-child(2) code{white-space:nowrap}#finding-table td:nth-child(3){min-width:7em}#finding-table td:nth-child(4){max-width:16em}
        .badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;color:#fff;white-space:nowrap}
        .sev-error{background:var(--err)}.sev-warning{background:var(--warn)}.sev-info{background:var(--info)}
        .cap,.muted{color:var(--muted)}.cap{font-style:italic}.problem{color:var(--err);font-weight:600}
        .controls{display:flex;flex-wrap:wrap;gap:16px;align-items:center;margin:8px 0;padding:6px 0;position:sticky;top:0;background:var(--bg)}
        .controls input{width:18em}nav a{margin-right:10px}
        dl.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:6px 0}dl.facts dd{margin:0;white-space:pre-line;overflow-wrap:anywhere}dl.facts dt{color:var(--muted)}
        .card{border:1px solid var(--line);border-radius:8px;padding:8px 14px}
        .msg{margin:0 0 4px;font-weight:600}.why{margin:4px 0;color:var(--muted)}.todo{margin:4px 0}
        details summary{cursor:pointer;color:var(--info)}
        svg{max-width:100%;height:auto;display:block;margin:6px 0 4px}svg text{font:11px system-ui,sans-serif;fill:#1d1d1f}
        footer{margin-top:40px;color:var(--muted);font-size:12px}
        @media print{body{max-width:none;padding:0;font-size:11px}.controls,nav{display:none}h2{break-after:avoid}
        tr,.card,svg,li{break-inside:avoid}.badge{color:#000;background:none;border:1px solid #000}details>*{display:block}
        a{color:inherit;text-decoration:none}table{font-size:10px}}

        """

    /// Reads `#severity=error&q=text` on load, applies it, and keeps the fragment in step with the
    /// controls. It touches no store string except through the DOM (textContent), and fetches nothing.
    static let script = """
        (function(){
        var rows=[].slice.call(document.querySelectorAll('tr.finding'));
        var sev=document.getElementById('sev'),q=document.getElementById('q'),status=document.getElementById('finding-status');
        function parse(){var p={};location.hash.replace(/^#/,'').split('&').forEach(function(kv){var i=kv.indexOf('=');
        if(i>0){try{p[kv.slice(0,i)]=decodeURIComponent(kv.slice(i+1));}catch(e){}}});return p;}
        function apply(write){var s=sev.value,t=q.value.toLowerCase(),n=0;
        rows.forEach(function(r){var ok=(s==='all'||r.getAttribute('data-severity')===s)&&(!t||r.textContent.toLowerCase().indexOf(t)>=0);
        r.hidden=!ok;if(ok)n++;});
        status.textContent='showing '+n+' of '+rows.length+' finding'+(rows.length===1?'':'s')+(s!=='all'?' (severity '+s+')':'')+(t?' matching \\u201c'+q.value+'\\u201d':'');
        document.body.setAttribute('data-filter',s);
        if(write){var h=[];if(s!=='all')h.push('severity='+s);if(t)h.push('q='+encodeURIComponent(q.value));
        try{history.replaceState(null,'',h.length?'#'+h.join('&'):location.pathname+location.search);}catch(e){}}}
        function load(){var p=parse();sev.value=/^(all|error|warning|info)$/.test(p.severity||'')?p.severity:'all';q.value=p.q||'';apply(false);}
        sev.addEventListener('change',function(){apply(true);});q.addEventListener('input',function(){apply(true);});
        window.addEventListener('hashchange',load);load();
        document.documentElement.setAttribute('data-resources',String(performance.getEntriesByType('resource').length));
        document.documentElement.setAttribute('data-ready-ms',String(Math.round(performance.now())));
        })();

        """
}

/// Inline SVG charts. Labels are escaped by `HTML.escape` like every other string.
enum SVGChart {
    static func plural(_ n: Int, _ word: String) -> String { HTMLReport.plural(n, word) }
    static let palette = ["#0b57d0", "#e8710a", "#188038", "#a142f4", "#d93025", "#12b5cb", "#f9ab00", "#5f6368"]

    /// Shortens a label for the chart (the full text is in the bar's tooltip).
    static func short(_ s: String, _ n: Int = 30) -> String { s.count <= n ? s : String(s.prefix(n - 1)) + "…" }

    /// Horizontal grouped bars: one group per label, one bar per series.
    static func bars(groups: [(label: String, values: [Int])], series: [String], caption: String) -> String {
        let labelWidth = 210, plotWidth = 600, barHeight = 12, gap = 10, legendHeight = 24
        let groupHeight = series.count * barHeight + gap
        let height = legendHeight + groups.count * groupHeight + 8
        let width = labelWidth + plotWidth + 90
        let maxValue = max(1, groups.flatMap(\.values).max() ?? 1)
        var s = "<svg viewBox=\"0 0 \(width) \(height)\" width=\"\(width)\" height=\"\(height)\" role=\"img\" aria-label=\"\(HTML.escape(caption))\">"
        s += "<title>\(HTML.escape(caption))</title>"
        var x = labelWidth
        for (i, name) in series.enumerated() {
            s += "<rect x=\"\(x)\" y=\"6\" width=\"10\" height=\"10\" fill=\"\(palette[i % palette.count])\"/>"
            s += "<text x=\"\(x + 14)\" y=\"15\">\(HTML.escape(short(name, 24)))</text>"
            x += 30 + min(24, name.count) * 7
        }
        for (g, group) in groups.enumerated() {
            let top = legendHeight + g * groupHeight
            s += "<text x=\"\(labelWidth - 6)\" y=\"\(top + series.count * barHeight / 2 + 4)\" text-anchor=\"end\">\(HTML.escape(short(group.label)))</text>"
            for (i, value) in group.values.enumerated() {
                let y = top + i * barHeight
                let w = value == 0 ? 0 : max(1, Int(Double(plotWidth) * Double(value) / Double(maxValue)))
                let name = i < series.count ? series[i] : ""
                s += "<rect x=\"\(labelWidth)\" y=\"\(y)\" width=\"\(w)\" height=\"\(barHeight - 2)\" fill=\"\(palette[i % palette.count])\">"
                s += "<title>\(HTML.escape("\(group.label), \(name): \(HTML.number(value))"))</title></rect>"
                s += "<text x=\"\(labelWidth + w + 4)\" y=\"\(y + barHeight - 3)\">\(HTML.number(value))</text>"
            }
        }
        s += "</svg>\n"
        return s
    }

    /// One lane per writer, one bar per time bucket, heights by transactions.
    static func timeline(_ t: HistoryTimeline, caption: String) -> String {
        let labelWidth = 280, plotWidth = 600, laneHeight = 30, axisHeight = 34
        let width = labelWidth + plotWidth + 20
        let height = t.writers.count * laneHeight + axisHeight
        let maxBucket = max(1, t.writers.flatMap(\.buckets).max() ?? 1)
        let barWidth = Double(plotWidth) / Double(max(1, t.bucketCount))
        var s = "<svg viewBox=\"0 0 \(width) \(height)\" width=\"\(width)\" height=\"\(height)\" role=\"img\" aria-label=\"\(HTML.escape(caption))\">"
        s += "<title>\(HTML.escape(caption))</title>"
        for (lane, writer) in t.writers.enumerated() {
            let top = lane * laneHeight
            let color = palette[lane % palette.count]
            s += "<line x1=\"\(labelWidth)\" x2=\"\(labelWidth + plotWidth)\" y1=\"\(top + laneHeight - 2)\" y2=\"\(top + laneHeight - 2)\" stroke=\"#d2d2d7\"/>"
            s += "<text x=\"\(labelWidth - 6)\" y=\"\(top + laneHeight / 2 + 4)\" text-anchor=\"end\">\(HTML.escape(short(writer.label, 44)))<title>\(HTML.escape("\(writer.label): \(plural(writer.transactions, "transaction"))"))</title></text>"
            for (b, count) in writer.buckets.enumerated() where count > 0 {
                let h = max(2, Int(Double(laneHeight - 6) * Double(count) / Double(maxBucket)))
                let x = Double(labelWidth) + Double(b) * barWidth
                let from = (t.firstSeconds ?? 0) + Double(b) * t.bucketSeconds
                let tip = "\(writer.label): \(plural(count, "transaction")) from \(DisplayZone.current.iso8601(referenceSeconds: from)) to \(DisplayZone.current.iso8601(referenceSeconds: from + t.bucketSeconds))"
                s += "<rect x=\"\(String(format: "%.1f", x))\" y=\"\(top + laneHeight - 2 - h)\" width=\"\(String(format: "%.1f", max(1, barWidth - 1)))\" height=\"\(h)\" fill=\"\(color)\">"
                s += "<title>\(HTML.escape(tip))</title></rect>"
            }
        }
        let axisY = t.writers.count * laneHeight
        s += "<line x1=\"\(labelWidth)\" x2=\"\(labelWidth + plotWidth)\" y1=\"\(axisY)\" y2=\"\(axisY)\" stroke=\"#5f6368\"/>"
        if let first = t.firstSeconds, let last = t.lastSeconds {
            for (fraction, anchor) in [(0.0, "start"), (0.5, "middle"), (1.0, "end")] {
                let x = labelWidth + Int(Double(plotWidth) * fraction)
                let when = DisplayZone.current.iso8601(referenceSeconds: first + (last - first) * fraction)
                s += "<line x1=\"\(x)\" x2=\"\(x)\" y1=\"\(axisY)\" y2=\"\(axisY + 5)\" stroke=\"#5f6368\"/>"
                s += "<text x=\"\(x)\" y=\"\(axisY + 18)\" text-anchor=\"\(anchor)\">\(HTML.escape(when))</text>"
            }
        } else {
            s += "<text x=\"\(labelWidth)\" y=\"\(axisY + 18)\">the transactions have no timestamps</text>"
        }
        s += "</svg>\n"
        return s
    }
}
