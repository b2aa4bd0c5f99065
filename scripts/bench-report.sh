#!/usr/bin/env bash
# The report part of `make bench` (called by scripts/bench.sh, or on its own after `swift build -c release`).
# Generates a store of BENCH_REPORT_ROWS rows (default 1,000,000) written in transactions of
# BENCH_REPORT_BATCH rows (default 10: 100,000 history transactions), the last 1% of them still in
# the WAL, then measures on the same files in the same run:
#   - `storelens report` on it: wall time, peak memory, and the HTML file's size;
#   - headless chromium loading that report and, for reference, an empty page (`--dump-dom`, whole
#     process: start, load, script, serialise); and the report's own time to ready, read inside the
#     page (performance.now() when its script has run, which it writes to data-ready-ms).
# Prints a markdown section on stdout. Figures are never asserted in tests.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/release/storelens}
GEN=${GEN:-.build/release/storelens-fixtures}
RUNS=${BENCH_RUNS:-5}
GEN_RUNS=${BENCH_REPORT_RUNS:-3}
ROWS=${BENCH_REPORT_ROWS:-1000000}
BATCH=${BENCH_REPORT_BATCH:-10}
CORPUS=bench-corpus
STORE="$CORPUS/report-$ROWS-$BATCH.store"
mkdir -p "$CORPUS"
[ -x "$BIN" ] && [ -x "$GEN" ] || { echo "bench-report.sh: build first (swift build -c release)" >&2; exit 1; }
CHROMIUM=${STORELENS_CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)}

if [ ! -f "$STORE" ]; then
  echo "generating $STORE ($ROWS rows in transactions of $BATCH)…" >&2
  rm -f "$STORE" "$STORE-wal" "$STORE-shm"
  "$GEN" bench-store "$STORE" "$ROWS" "$BATCH" 0.01
fi
transactions=$((ROWS / BATCH + 1))
store_mb=$(( ($(stat -c %s "$STORE") + $( [ -f "$STORE-wal" ] && stat -c %s "$STORE-wal" || echo 0)) / 1048576 ))

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# storelens report: wall time and peak memory (the last run's file is the one measured).
gen_times=(); gen_kb=()
for _ in $(seq "$GEN_RUNS"); do
  rm -f "$scratch/report.html"
  start=$(date +%s.%N)
  kb=$(/usr/bin/time -f '%M' "$BIN" report "$STORE" --out "$scratch/report.html" --quiet 2>&1 >/dev/null | tail -1)
  end=$(date +%s.%N)
  gen_times+=("$(echo "$end - $start" | bc -l)"); gen_kb+=("$kb")
done
gen_s=$(printf '%s\n' "${gen_times[@]}" | median)
gen_mb=$(( $(printf '%s\n' "${gen_kb[@]}" | median) / 1024 ))
bytes=$(stat -c %s "$scratch/report.html")
size_verdict=$([ "$bytes" -lt 5242880 ] && echo met || echo MISSED)

echo "### Report"
echo
printf 'Corpus: `%s`, %s rows (notes with inheritance, tags, folders) written in %s history transactions, 1%% of them still in the WAL; %s MB with its WAL. Medians of %s runs.\n' \
  "$STORE" "$ROWS" "$transactions" "$store_mb" "$RUNS"
echo
echo "| what | figure | target |"
echo "|---|---|---|"
printf '| `storelens report` (hash, copy, inspect, WAL analysis, history timeline, checks, repair plan, HTML), median of %s | %.2f s, %s MB peak | none set |\n' "$GEN_RUNS" "$gen_s" "$gen_mb"
printf '| report size | %s bytes (%.2f MB) | < 5 MB (%s) |\n' "$bytes" "$(echo "$bytes / 1048576" | bc -l)" "$size_verdict"

if [ -z "$CHROMIUM" ]; then
  echo
  echo "Load time not measured: chromium is not installed (\`make deps\` installs it as root on Debian)."
  exit 0
fi
printf '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>empty</title></head><body></body></html>\n' > "$scratch/empty.html"
load() {  # wall seconds of chromium loading $1 and dumping its DOM; the DOM goes to $2
  local start end
  start=$(date +%s.%N)
  "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run --disable-extensions \
    --user-data-dir="$scratch/profile" --dump-dom "file://$1" > "$2" 2>/dev/null
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}
load "$scratch/empty.html" /dev/null >/dev/null   # first start creates the profile
empty_times=(); report_times=(); ready=()
for _ in $(seq "$RUNS"); do
  empty_times+=("$(load "$scratch/empty.html" /dev/null)")
  report_times+=("$(load "$scratch/report.html" "$scratch/dom.html")")
  ready+=("$(sed -n 's/.*data-ready-ms="\([0-9]*\)".*/\1/p' "$scratch/dom.html" | head -1)")
done
empty_s=$(printf '%s\n' "${empty_times[@]}" | median)
report_s=$(printf '%s\n' "${report_times[@]}" | median)
ready_ms=$(printf '%s\n' "${ready[@]}" | median)
load_verdict=$(echo "$report_s < 2" | bc -l | sed 's/1/met/;s/0/MISSED/')
printf '| headless chromium opening the report (whole process: start, load, run its script, dump the DOM) | %.3f s | < 2 s (%s) |\n' "$report_s" "$load_verdict"
printf '| headless chromium opening an empty page, same way (reference) | %.3f s | reference |\n' "$empty_s"
printf '| the report'"'"'s own time to ready inside the page (performance.now() when its script has run) | %s ms | none set |\n' "${ready_ms:-?}"
echo
echo "$("$CHROMIUM" --version 2>/dev/null | head -1). The report lists no rows: entity tables hold counts, the history timeline is bucketed, and long lists are capped with a note, so its size does not grow with the store."
