#!/usr/bin/env bash
# make bench: runs storelens beside the tool a user would otherwise use, on the same files in the
# same run, several times, and writes medians and ratios to docs/performance.md.
# Sizes: BENCH_ROWS (default 200000). The corpus lives in bench-corpus/ (not in git).
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${BENCH_ROWS:-200000}
RUNS=${BENCH_RUNS:-5}
CORPUS=bench-corpus
BIN=.build/release/storelens
GEN=.build/release/storelens-fixtures
mkdir -p "$CORPUS"
STORE="$CORPUS/notes-$ROWS.store"
if [ ! -f "$STORE" ]; then
  echo "generating $STORE ($ROWS rows)…"
  rm -f "$STORE" "$STORE-wal" "$STORE-shm"
  "$GEN" bench-store "$STORE" "$ROWS"
fi

# median wall seconds of RUNS runs of a command
median() {
  local times=()
  for _ in $(seq "$RUNS"); do
    local start end
    start=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc -l)")
  done
  printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
peak_kb() { /usr/bin/time -f '%M' "$@" 2>&1 >/dev/null | tail -1; }

# The reference: sqlite3 counting the same tables on a scratch copy (it would checkpoint an original).
ref_dir=$(mktemp -d)
trap 'rm -rf "$ref_dir"' EXIT
reference() {
  rm -f "$ref_dir"/*
  cp "$STORE" "$ref_dir/s.store"; [ -f "$STORE-wal" ] && cp "$STORE-wal" "$ref_dir/s.store-wal"
  sqlite3 "$ref_dir/s.store" 'SELECT Z_ENT, count(*) FROM ZNOTE GROUP BY Z_ENT; SELECT count(*) FROM ZTAG; SELECT count(*) FROM ZFOLDER; SELECT count(*) FROM ATRANSACTION; SELECT count(*) FROM ACHANGE;'
}

inspect_s=$(median "$BIN" inspect "$STORE")
ref_s=$(median reference)
inspect_kb=$(peak_kb "$BIN" inspect "$STORE")
ratio=$(echo "$inspect_s / $ref_s" | bc -l)
size_mb=$(du -m "$STORE" | cut -f1); wal_mb=$( [ -f "$STORE-wal" ] && du -m "$STORE-wal" | cut -f1 || echo 0)

# scan: a container archive of at least 200 MB (media files plus the store) against bsdtar -tzf.
# A realistic container: many media files and a few stores (a SwiftData store with a WAL, a
# Core Data store, a cache database named like anything but a database).
MEDIA_MB=${BENCH_MEDIA_MB:-220}
ARCHIVE="$CORPUS/container-${MEDIA_MB}mb.tar.gz"
if [ ! -f "$ARCHIVE" ]; then
  echo "generating $ARCHIVE (${MEDIA_MB} MB of media plus three stores)…"
  tree="$CORPUS/container"
  rm -rf "$tree"; mkdir -p "$tree/Documents/Media" "$tree/Library/Application Support" "$tree/Library/Caches" "$tree/tmp"
  for i in $(seq 1 $((MEDIA_MB / 2))); do head -c 2097152 /dev/urandom > "$tree/Documents/Media/IMG_$i.jpg"; done
  for i in $(seq 1 400); do head -c 4096 /dev/urandom > "$tree/Library/Caches/thumb_$i.dat"; done
  "$GEN" bench-store "$tree/Library/Application Support/default.store" 5000
  "$GEN" bench-store "$tree/Library/Application Support/Model.sqlite" 1000
  sqlite3 "$tree/Library/Caches/Cache.data" 'CREATE TABLE c (k, v); INSERT INTO c VALUES (1, randomblob(100000));'
  bsdtar -czf "$ARCHIVE" -C "$tree" .
  rm -rf "$tree"
fi
scan_s=$(median "$BIN" scan "$ARCHIVE")
bsdtar_s=$(median bsdtar -tzf "$ARCHIVE")
scan_kb=$(peak_kb "$BIN" scan "$ARCHIVE")
scan_ratio=$(echo "$scan_s / $bsdtar_s" | bc -l)
archive_mb=$(du -m "$ARCHIVE" | cut -f1)
scan_verdict=$(echo "$scan_ratio <= 1.15" | bc -l | sed 's/1/met/;s/0/MISSED/')
mem_verdict=$([ "$((scan_kb / 1024))" -lt 64 ] && echo met || echo MISSED)

extra=""
if [ -x scripts/bench-wal.sh ]; then extra=$(scripts/bench-wal.sh || echo "(bench-wal.sh failed)"); fi
report=""
if [ -x scripts/bench-report.sh ]; then report=$(scripts/bench-report.sh || echo "(bench-report.sh failed)"); fi

{
  echo "# Performance"
  echo
  echo "Written by \`make bench\` ($(date -u +%Y-%m-%d), $(nproc) cores, $(uname -m), SQLite $(sqlite3 --version | cut -d' ' -f1)). Medians of $RUNS runs; ratios are storelens ÷ reference in the same run, so machine noise mostly cancels. Figures are never asserted in tests."
  echo
  echo "Corpus: \`$STORE\`, $ROWS notes with inheritance, a many-to-many relationship and history; main file $size_mb MB, WAL $wal_mb MB."
  echo
  echo "| what | storelens | reference | reference tool | ratio | target | peak memory (storelens) |"
  echo "|---|---|---|---|---|---|---|"
  printf '| scan of a %s MB container .tar.gz | %.3f s | %.3f s | bsdtar -tzf | %.2f× | ≤ 1.15× (%s) | %s MB (< 64 MB: %s) |\n' "$archive_mb" "$scan_s" "$bsdtar_s" "$scan_ratio" "$scan_verdict" "$((scan_kb / 1024))" "$mem_verdict"
  printf '| inspect (hash, copy, count every entity in both views) | %.3f s | %.3f s | sqlite3 counting the same tables on a copy | %.2f× | none set | %s MB |\n' "$inspect_s" "$ref_s" "$ratio" "$((inspect_kb / 1024))"
  echo
  echo "scan hashes the archive (SHA-256, before and after), streams it once through libarchive, sniffs every entry and extracts only the store family; bsdtar only lists names. inspect does more than its reference: it hashes every input file twice (SHA-256, before and after), copies the store, and counts rows in the main-file-only view too."
  if [ -n "$extra" ]; then echo; echo "$extra"; fi
  if [ -n "$report" ]; then echo; echo "$report"; fi
} > docs/performance.md
cat docs/performance.md
