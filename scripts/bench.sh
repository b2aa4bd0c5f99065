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

extra=""
if [ -x scripts/bench-wal.sh ]; then extra=$(scripts/bench-wal.sh || echo "(bench-wal.sh failed)"); fi

{
  echo "# Performance"
  echo
  echo "Written by \`make bench\` ($(date -u +%Y-%m-%d), $(nproc) cores, $(uname -m), SQLite $(sqlite3 --version | cut -d' ' -f1)). Medians of $RUNS runs; ratios are storelens ÷ reference in the same run, so machine noise mostly cancels. Figures are never asserted in tests."
  echo
  echo "Corpus: \`$STORE\`, $ROWS notes with inheritance, a many-to-many relationship and history; main file $size_mb MB, WAL $wal_mb MB."
  echo
  echo "| what | storelens | reference | reference tool | ratio | target | peak memory (storelens) |"
  echo "|---|---|---|---|---|---|---|"
  printf '| inspect (hash, copy, count every entity in both views) | %.3f s | %.3f s | sqlite3 counting the same tables on a copy | %.2f× | none set | %s MB |\n' "$inspect_s" "$ref_s" "$ratio" "$((inspect_kb / 1024))"
  echo
  echo "inspect does more than the reference: it hashes every input file twice (SHA-256, before and after), copies the store, and counts rows in the main-file-only view too."
  if [ -n "$extra" ]; then echo; echo "$extra"; fi
} > docs/performance.md
cat docs/performance.md
