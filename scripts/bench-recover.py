#!/usr/bin/env python3
"""The corpus and the scoring of scripts/bench-recover.sh (recover's rows in `make bench`).

  bench-recover.py make STORE OUT_DIR     build the two stores and their truth from STORE
  bench-recover.py score KIND OUTPUT TRUTH  count what one tool recovered, per source

`make` takes a Core Data store written by `storelens-fixtures bench-store` (checkpointed into its
main file) and writes, with SQLite itself (secure_delete off; Debian's SQLite turns it on):
  main/default.store  every 10th Note deleted (freed cells: freeblocks inside leaf pages) and a run
                      of a tenth of the keys deleted (whole leaf pages onto the freelist);
  wal/default.store + -wal  the main file untouched, then the Notes with Z_PK % 10 == 5 deleted in
                      committed WAL frames (the -wal copied while the connection is still open, so
                      SQLite cannot checkpoint it away on close).
truth.json names every deleted record (Z_PK, title) and the source it should be recovered from.

`score` reads a tool's output and prints one JSON line: per source, how many of the truth's records
the tool gave back with the right key and title (recall), and how many records it offered as
recovered that are not a deleted record exactly (for precision).
"""
import csv
import json
import os
import shutil
import sqlite3
import sys


def make(store, out):
    truth = {}
    main_dir, wal_dir = os.path.join(out, "main"), os.path.join(out, "wal")
    for d in (main_dir, wal_dir):
        os.makedirs(d, exist_ok=True)
    c = sqlite3.connect(store)
    n = c.execute("SELECT max(Z_PK) FROM ZNOTE").fetchone()[0]
    titles = dict(c.execute("SELECT Z_PK, ZTITLE FROM ZNOTE"))
    c.close()
    lo, hi = n // 4 + 1, n // 4 + n // 10  # a run of keys: whole pages freed

    # main: freeblocks and freelist pages.
    main_store = os.path.join(main_dir, "default.store")
    shutil.copyfile(store, main_store)
    c = sqlite3.connect(main_store, isolation_level=None)
    c.execute("PRAGMA secure_delete = OFF")
    c.execute("PRAGMA journal_mode = DELETE")
    doomed = "(Z_PK % 10 = 0 AND Z_PK NOT BETWEEN {0} AND {1}) OR Z_PK BETWEEN {0} AND {1}".format(lo, hi)
    c.execute("BEGIN")
    c.execute("DELETE FROM ZNOTE WHERE " + doomed)
    c.execute("DELETE FROM Z_2TAGS WHERE " + doomed.replace("Z_PK", "Z_2NOTES"))
    c.execute("COMMIT")
    c.close()
    truth["main"] = {str(pk): {"title": titles[pk], "source": "freelist" if lo <= pk <= hi else "freeblock"}
                     for pk in titles if (lo <= pk <= hi) or pk % 10 == 0}

    # wal: deletions only in committed WAL frames.
    wal_store = os.path.join(wal_dir, "default.store")
    shutil.copyfile(store, wal_store)
    c = sqlite3.connect(wal_store, isolation_level=None)
    c.execute("PRAGMA secure_delete = OFF")
    c.execute("PRAGMA journal_mode = WAL")
    c.execute("PRAGMA wal_autocheckpoint = 0")
    c.execute("BEGIN")
    c.execute("DELETE FROM ZNOTE WHERE Z_PK % 10 = 5")
    c.execute("DELETE FROM Z_2TAGS WHERE Z_2NOTES % 10 = 5")
    c.execute("COMMIT")
    shutil.copyfile(wal_store + "-wal", os.path.join(out, "wal-copy"))
    shutil.copyfile(wal_store, os.path.join(out, "main-copy"))
    c.close()  # checkpoints and removes the -wal: put the copies back
    os.replace(os.path.join(out, "main-copy"), wal_store)
    os.replace(os.path.join(out, "wal-copy"), wal_store + "-wal")
    for extra in ("-shm",):
        if os.path.exists(wal_store + extra):
            os.remove(wal_store + extra)
    truth["wal"] = {str(pk): {"title": titles[pk], "source": "wal-deleted"} for pk in titles if pk % 10 == 5}
    # The records still live: an old copy of one (a page split's leftover) is not a false positive.
    live = {str(pk): t for pk, t in titles.items()}
    for case in ("main", "wal"):
        truth[case + "-live"] = {pk: t for pk, t in live.items() if pk not in truth[case]}
    with open(os.path.join(out, "truth.json"), "w") as f:
        json.dump(truth, f)


def score(kind, output, truth_path, case):
    everything = json.load(open(truth_path))
    truth, live = everything[case], everything[case + "-live"]
    by_title = {v["title"]: int(pk) for pk, v in truth.items()}
    found, offered, wrong = set(), 0, 0

    def judge(pk, title):
        nonlocal offered, wrong
        if pk is not None and live.get(str(pk)) == title:
            return  # a copy of a live record, not a recovered one
        offered += 1
        if pk is not None and str(pk) in truth and truth[str(pk)]["title"] == title:
            found.add(pk)
        elif pk is None and title in by_title:
            found.add(by_title[title])
        else:
            wrong += 1

    if kind == "storelens":  # recover --format jsonl --state deleted,carved
        for line in open(output):
            d = json.loads(line)
            if d["_table"] == "ZNOTE":
                judge(d["_pk"], d.get("title"))
    elif kind == "sqlite-recover":  # the .recover script loaded into a database
        c = sqlite3.connect(output)
        columns = [r[1] for r in c.execute("PRAGMA table_info(lost_and_found)")]
        if "c7" in columns:
            # A ZNOTE cell has 9 columns; its title is the 8th (c7). Other tables' cells are not offered.
            for pk, title in c.execute("SELECT id, c7 FROM lost_and_found WHERE nfield = 9"):
                judge(pk, title)
        # Rows .recover put back into ZNOTE itself that the store no longer has count as recovered too.
        for pk, title in c.execute("SELECT Z_PK, ZTITLE FROM ZNOTE"):
            if str(pk) in truth:
                judge(pk, title)
    elif kind == "sqlite-dissect":  # the ZNOTE csv: carved cells, and the WAL's deleted rows
        for d in csv.DictReader(open(output, newline="")):
            allocated = d["Location"] == "Allocated Space" and d["Operation"] != "Deleted"
            if not allocated:  # carved cells, and rows a WAL commit deleted
                rid = d.get("Row ID") or d.get("Z_PK")
                pk = int(rid) if rid and rid.lstrip("-").isdigit() else None
                judge(pk, d.get("ZTITLE"))
    sources = {}
    for pk, v in truth.items():
        s = sources.setdefault(v["source"], [0, 0])
        s[1] += 1
        if int(pk) in found:
            s[0] += 1
    print(json.dumps({"sources": sources, "offered": offered, "wrong": wrong}))


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3])
    else:
        score(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5])
