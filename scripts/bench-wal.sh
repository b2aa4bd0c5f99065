#!/usr/bin/env bash
# The WAL part of `make bench` (called by scripts/bench.sh, or on its own after `swift build -c release`).
# Generates a store whose -wal is at least BENCH_WAL_MB MB (default 110) with SQLite itself, then
# measures, on the same files in the same run:
#   - storelens' WAL scan (header, salts and cumulative checksums of every frame) in-process,
#     as reported by `STORELENS_TIMINGS=1 storelens wal`;
#   - the whole `storelens wal` command (hash, copy, scan, pages to tables at every commit);
#   - sqlite3 opening a scratch copy of the same store and counting a table (it too must read
#     and checksum every frame to rebuild its wal-index).
# Prints a markdown section on stdout. Figures are never asserted in tests.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/release/storelens}
RUNS=${BENCH_RUNS:-5}
WAL_MB=${BENCH_WAL_MB:-110}
CORPUS=bench-corpus
STORE="$CORPUS/wal-${WAL_MB}mb.sqlite"
mkdir -p "$CORPUS"
[ -x "$BIN" ] || { echo "bench-wal.sh: $BIN is missing; run 'swift build -c release' first" >&2; exit 1; }

if [ ! -f "$STORE-wal" ]; then
  echo "generating $STORE (a ${WAL_MB} MB WAL, written by sqlite3 with checkpoints off)…" >&2
  rm -f "$STORE" "$STORE-wal" "$STORE-shm"
  # 4000-byte rows fill one 4096-byte page each; 25 transactions of ROWS/25 rows.
  rows=$(( WAL_MB * 1024 * 1024 / 4120 ))
  per=$(( rows / 25 + 1 ))
  {
    echo "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;"
    echo ".dbconfig no_ckpt_on_close on"
    echo "CREATE TABLE item (id INTEGER PRIMARY KEY, body BLOB);"
    echo "PRAGMA wal_checkpoint(TRUNCATE);"
    for t in $(seq 0 24); do
      echo "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < $per)"
      echo "  INSERT INTO item (body) SELECT randomblob(4000) FROM n;"
    done
  } | sqlite3 "$STORE" >/dev/null
  rm -f "$STORE-shm"
fi
wal_bytes=$(stat -c %s "$STORE-wal")
wal_mb=$(echo "$wal_bytes / 1048576" | bc -l)

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# storelens: the in-process scan and the whole command.
scan_times=(); analyze_times=(); command_times=()
for _ in $(seq "$RUNS"); do
  start=$(date +%s.%N)
  line=$(STORELENS_TIMINGS=1 "$BIN" wal "$STORE" --format json --no-integrity-check 2>&1 >/dev/null | grep '^timing ')
  end=$(date +%s.%N)
  scan_times+=("$(echo "$line" | sed 's/.*wal-scan-seconds=\([0-9.]*\).*/\1/')")
  analyze_times+=("$(echo "$line" | sed 's/.*analyze-seconds=\([0-9.]*\).*/\1/')")
  command_times+=("$(echo "$end - $start" | bc -l)")
  frames=$(echo "$line" | sed 's/.*valid-frames=\([0-9]*\).*/\1/')
done
scan_s=$(printf '%s\n' "${scan_times[@]}" | median)
analyze_s=$(printf '%s\n' "${analyze_times[@]}" | median)
command_s=$(printf '%s\n' "${command_times[@]}" | median)
throughput=$(echo "$wal_bytes / $scan_s / 1000000000" | bc -l)
verdict=$(echo "$throughput >= 1" | bc -l | sed 's/1/met/;s/0/MISSED/')

# sqlite3 on a scratch copy (it would rebuild -shm and could checkpoint an original).
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
sqlite_times=()
for _ in $(seq "$RUNS"); do
  rm -f "$scratch"/*
  cp "$STORE" "$scratch/s.sqlite"; cp "$STORE-wal" "$scratch/s.sqlite-wal"
  start=$(date +%s.%N)
  count=$(sqlite3 -cmd ".dbconfig no_ckpt_on_close on" "$scratch/s.sqlite" 'SELECT count(*) FROM item;' | tail -1)
  end=$(date +%s.%N)
  sqlite_times+=("$(echo "$end - $start" | bc -l)")
done
sqlite_s=$(printf '%s\n' "${sqlite_times[@]}" | median)

echo "### WAL scan"
echo
printf 'Corpus: `%s`, a %.0f MB WAL (%s frames, 25 commits) written by sqlite3 with automatic checkpoints off; %s rows. Medians of %s runs.\n' "$STORE" "$wal_mb" "$frames" "$count" "$RUNS"
echo
echo "| what | time | throughput | target |"
echo "|---|---|---|---|"
printf '| storelens WAL scan (every frame: salts, cumulative checksum), in-process | %.3f s | %.2f GB/s | ≥ 1 GB/s (%s) |\n' "$scan_s" "$throughput" "$verdict"
printf '| sqlite3 opening a copy of the same store and counting its table (rebuilds the wal-index from every frame) | %.3f s | %.2f GB/s | reference |\n' "$sqlite_s" "$(echo "$wal_bytes / $sqlite_s / 1000000000" | bc -l)"
printf '| storelens WAL analysis (pages to tables at every commit, the WAL-view image, entity names), in-process | %.3f s | %.2f GB/s | none set |\n' "$analyze_s" "$(echo "$wal_bytes / $analyze_s / 1000000000" | bc -l)"
printf '| `storelens wal` whole command (SHA-256 of the originals before and after, copy, scan, pages to tables at every commit) | %.3f s | %.2f GB/s | none set |\n' "$command_s" "$(echo "$wal_bytes / $command_s / 1000000000" | bc -l)"
