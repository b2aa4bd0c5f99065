#!/usr/bin/env bash
# make bench: runs storelens beside the tool a user would otherwise use, on the same files in the
# same run, several times, and writes medians, ratios and peak memory to docs/performance.md.
#
# The corpus (bench-corpus/, not in git; built once per size, then reused):
#   - a store of ROWS notes (a fifth of them a subentity, each in a many-to-many relationship),
#     written in TRANSACTIONS history transactions, the last of which stay in an uncheckpointed WAL
#     of at least WAL_MB MB;
#   - an app container holding it among ARCHIVE_MB MB of media files (and a Core Data store, a cache
#     database), as a .tar.gz and as a .zip.
#
# Sizes, as flags or environment variables (defaults: the full sizes):
#   --rows N          BENCH_ROWS          1000000
#   --transactions N  BENCH_TRANSACTIONS  100000
#   --wal-mb N        BENCH_WAL_MB        100
#   --archive-mb N    BENCH_ARCHIVE_MB    500
#   --runs N          BENCH_RUNS          3       (timed runs per command; the median is reported)
# For a quick look: scripts/bench.sh --rows 100000 --transactions 10000 --wal-mb 30 --archive-mb 100
set -euo pipefail
cd "$(dirname "$0")/.."

ROWS=${BENCH_ROWS:-1000000}
TRANSACTIONS=${BENCH_TRANSACTIONS:-100000}
WAL_MB=${BENCH_WAL_MB:-100}
ARCHIVE_MB=${BENCH_ARCHIVE_MB:-500}
RUNS=${BENCH_RUNS:-3}
while [ $# -gt 0 ]; do
  case $1 in
    --rows) ROWS=$2; shift 2 ;;
    --transactions) TRANSACTIONS=$2; shift 2 ;;
    --wal-mb) WAL_MB=$2; shift 2 ;;
    --archive-mb) ARCHIVE_MB=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

CORPUS=${BENCH_CORPUS:-bench-corpus}
BIN=.build/release/storelens
GEN=.build/release/storelens-fixtures
for tool in "$BIN" "$GEN"; do [ -x "$tool" ] || { echo "bench.sh: $tool is missing; run 'swift build -c release' (make bench does)" >&2; exit 1; }; done
for tool in sqlite3 bsdtar bc /usr/bin/time; do command -v "$tool" >/dev/null || { echo "bench.sh: $tool is missing (make deps installs it)" >&2; exit 1; }; done

BATCH=$(( ROWS / TRANSACTIONS > 0 ? ROWS / TRANSACTIONS : 1 ))
KEY="${ROWS}r-${TRANSACTIONS}t-${WAL_MB}wal-${ARCHIVE_MB}media"
TREE="$CORPUS/container-$KEY"
SUPPORT="$TREE/Library/Application Support"
STORE="$SUPPORT/default.store"
TGZ="$CORPUS/container-$KEY.tar.gz"
ZIP="$CORPUS/container-$KEY.zip"
mkdir -p "$CORPUS"

# --- The corpus ---------------------------------------------------------------------------------
if [ ! -f "$TREE/.complete" ]; then
  rm -rf "$TREE" "$TGZ" "$ZIP"
  mkdir -p "$SUPPORT" "$TREE/Documents/Media" "$TREE/Library/Caches" "$TREE/tmp"
  echo "generating $STORE: $ROWS rows in $TRANSACTIONS transactions ($BATCH rows each), a WAL of at least $WAL_MB MB…" >&2
  gen_start=$(date +%s.%N)
  "$GEN" bench-store "$STORE" "$ROWS" "$BATCH" "${WAL_MB}MB"
  "$GEN" bench-store "$SUPPORT/Model.sqlite" 2000 100 0
  gen_seconds=$(echo "$(date +%s.%N) - $gen_start" | bc -l)
  echo "$gen_seconds" > "$TREE/.generation-seconds"
  echo "adding $ARCHIVE_MB MB of media files…" >&2
  for i in $(seq 1 $(( (ARCHIVE_MB + 1) / 2 ))); do head -c 2097152 /dev/urandom > "$TREE/Documents/Media/IMG_$(printf %04d "$i").jpg"; done
  for i in $(seq 1 400); do head -c 4096 /dev/urandom > "$TREE/Library/Caches/thumb_$i.dat"; done
  sqlite3 "$TREE/Library/Caches/Cache.data" 'CREATE TABLE c (k, v); INSERT INTO c VALUES (1, randomblob(100000));'
  touch "$TREE/.complete"
fi
# A tenth of the store (rows, transactions, WAL): wal and report at two sizes show whether their
# memory grows with the number of commits and rows.
SMALL_STORE="$CORPUS/small-$KEY/default.store"
if [ ! -f "$CORPUS/small-$KEY/.complete" ]; then
  rm -rf "$CORPUS/small-$KEY"; mkdir -p "$CORPUS/small-$KEY"
  echo "generating $SMALL_STORE: a tenth of the bench store…" >&2
  "$GEN" bench-store "$SMALL_STORE" $(( ROWS / 10 )) "$BATCH" "$(( WAL_MB / 10 > 0 ? WAL_MB / 10 : 1 ))MB"
  touch "$CORPUS/small-$KEY/.complete"
fi
if [ ! -f "$TGZ" ]; then echo "writing $TGZ…" >&2; bsdtar -czf "$TGZ.part" -C "$TREE" --exclude ./.complete --exclude ./.generation-seconds . && mv "$TGZ.part" "$TGZ"; fi
if [ ! -f "$ZIP" ]; then echo "writing $ZIP…" >&2; bsdtar --format zip -cf "$ZIP.part" -C "$TREE" --exclude ./.complete --exclude ./.generation-seconds . && mv "$ZIP.part" "$ZIP"; fi

# --- Measuring ----------------------------------------------------------------------------------
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
declare -A SECONDS_OF PEAK_KB_OF

# measure NAME [--prep FUNCTION] COMMAND...: RUNS timed runs (wall clock) under /usr/bin/time for
# the peak resident memory; keeps the medians. FUNCTION runs untimed before each run.
measure() {
  local name=$1; shift
  local prep=""
  if [ "$1" = --prep ]; then prep=$2; shift 2; fi
  local times=() peaks=()
  # One untimed run first: the first run after a build (or after the corpus was written) pays for
  # the kernel settling its dirty pages and page cache, which is not the command's cost.
  [ -n "$prep" ] && "$prep"
  "$@" >/dev/null 2>&1 || true
  for _ in $(seq "$RUNS"); do
    [ -n "$prep" ] && "$prep"
    local start end
    start=$(date +%s.%N)
    /usr/bin/time -f '%M' -o "$scratch/peak" "$@" >/dev/null 2>"$scratch/stderr" || true
    end=$(date +%s.%N)
    times+=("$(echo "$end - $start" | bc -l)")
    peaks+=("$(tail -1 "$scratch/peak")")
  done
  SECONDS_OF[$name]=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  PEAK_KB_OF[$name]=$(printf '%s\n' "${peaks[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '  %-28s %8.3f s  %6d MB\n' "$name" "${SECONDS_OF[$name]}" "$(( PEAK_KB_OF[$name] / 1024 ))" >&2
}

# The references read a scratch copy of the store (sqlite3 would checkpoint an original, or write
# its -shm). The copy is made once; before each run its -shm is removed so that every run rebuilds
# the wal-index from the WAL, as on a store just pulled off a device; checkpoint-on-close is off so
# the WAL stays for the next run.
cp "$STORE" "$scratch/s.store"; cp "$STORE-wal" "$scratch/s.store-wal"
fresh_copy() { rm -f "$scratch/s.store-shm"; }
# sqlite3 on the copy, as a command /usr/bin/time can run (.dbconfig's own output is discarded).
for mode in table json; do
  printf '#!/bin/sh\nexec sqlite3 %s -cmd ".output /dev/null" -cmd ".dbconfig no_ckpt_on_close on" -cmd ".output stdout" "%s" "$1"\n' \
    "$([ $mode = json ] && echo -json)" "$scratch/s.store" > "$scratch/sqlite-$mode"
  chmod +x "$scratch/sqlite-$mode"
done
ref_sqlite() { "$scratch/sqlite-table" "$1"; }
# The safe manual workflow a careful user would run instead of inspect: hash the
# originals, copy the family to a private folder, count the tables with sqlite3 on the copy.
cat > "$scratch/manual-workflow" <<'SH'
#!/bin/sh
set -e
store=$1; work=$2; shift 2
rm -rf "$work"; mkdir -p "$work"
sha256sum "$store" "$store-wal" > "$work/SHA256SUMS"
cp -a "$store" "$store-wal" "$work/"
sqlite3 "$work/$(basename "$store")" "$1"
SH
chmod +x "$scratch/manual-workflow"
COUNT_SQL="SELECT Z_ENT, count(*) FROM ZNOTE GROUP BY Z_ENT; SELECT count(*) FROM ZTAG; SELECT count(*) FROM ZFOLDER; SELECT count(*) FROM Z_2TAGS; SELECT count(*) FROM ATRANSACTION; SELECT count(*) FROM ACHANGE; SELECT count(*) FROM ATRANSACTIONSTRING;"
# The Core Data checks: every check id of docs/check.md but SQLite's own.
# The ids --only accepts, as storelens itself lists them (docs/check.md also lists findings no
# check can be asked for alone, such as check-incomplete, which made --only refuse the list).
# wal-mismatch is SQLite's integrity check of the tables the WAL wrote, on both views: with
# sqlite-integrity, not a Core Data check.
# (storelens exits 2 on the unknown id: with pipefail that status would end the script.)
CD_CHECKS=$({ "$BIN" check --only none /dev/null 2>&1 || true; } | sed -n 's/.*use one of: \(.*\)\.$/\1/p' | tr -d ' ' | tr ',' '\n' | grep -vE '^(sqlite-integrity|wal-mismatch)$' | paste -sd, -)
[ -n "$CD_CHECKS" ] || { echo "bench.sh: cannot read the check ids from 'storelens check --only'" >&2; exit 1; }

# Written data from the build or the corpus goes to disk before anything is timed.
sync
echo "measuring ($RUNS runs each after one untimed run; median wall time, median peak memory):" >&2
measure "scan tar.gz" "$BIN" scan "$TGZ"
measure "bsdtar -tzf" bsdtar -tzf "$TGZ"
measure "scan tar.gz libarchive" env STORELENS_GZIP=libarchive "$BIN" scan "$TGZ"
measure "scan zip" "$BIN" scan "$ZIP"
measure "bsdtar -tf zip" bsdtar -tf "$ZIP"
# What scan of a zip must do at least: list the central directory, then extract the
# entries it extracts (every SQLite file and sidecar of the corpus) into a fresh folder.
cat > "$scratch/zip-reference" <<'SH'
#!/bin/sh
set -e
zip=$1; work=$2
rm -rf "$work"; mkdir -p "$work"
bsdtar -tf "$zip" > /dev/null
bsdtar -xf "$zip" -C "$work" './Library/Application Support/*' './Library/Caches/Cache.data'
SH
chmod +x "$scratch/zip-reference"
measure "bsdtar -tf + -xf stores" "$scratch/zip-reference" "$ZIP" "$scratch/zip-extract"
measure "scan zip streaming" env STORELENS_ZIP=stream "$BIN" scan "$ZIP"
measure "inspect" "$BIN" inspect "$STORE"
measure "sqlite3 counts" --prep fresh_copy "$scratch/sqlite-table" "$COUNT_SQL"
measure "manual workflow" "$scratch/manual-workflow" "$STORE" "$scratch/manual" "$COUNT_SQL"
measure "rows jsonl" "$BIN" rows "$STORE" Note --format jsonl
measure "rows csv" "$BIN" rows "$STORE" Note --format csv
measure "sqlite3 -json" --prep fresh_copy "$scratch/sqlite-json" "SELECT * FROM ZNOTE"
measure "check" "$BIN" check "$STORE"
measure "check --only Core Data" "$BIN" check "$STORE" --only "$CD_CHECKS"
measure "quick_check" --prep fresh_copy "$scratch/sqlite-table" "PRAGMA quick_check"
# The fixed cost every command pays before its own work (hash before and after, WAL read, open):
# check running its cheapest check alone.
measure "check --only wal-missing" "$BIN" check "$STORE" --only wal-missing
# Read in place (the default) beside the copy (--copy, as every command did before the evidence
# VFS), and SQLite's own full integrity check, which check is held against.
measure "inspect --copy" "$BIN" inspect "$STORE" --copy
measure "check --copy" "$BIN" check "$STORE" --copy
measure "check --only wal-missing --copy" "$BIN" check "$STORE" --only wal-missing --copy
measure "integrity_check" --prep fresh_copy "$scratch/sqlite-table" "PRAGMA integrity_check"
# The working folder a command leaves with --keep-scratch (what it made there: copies, images),
# in KB, from a TMPDIR of its own.
scratch_kb() { # name, then the command
  local name=$1; shift
  local tmp="$scratch/tmpdir-$RANDOM"
  mkdir -p "$tmp"
  TMPDIR=$tmp "$@" --keep-scratch >/dev/null 2>&1 || true
  SCRATCH_KB_OF[$name]=$(du -sk "$tmp" | cut -f1)
  rm -rf "$tmp"
}
declare -A SCRATCH_KB_OF
for command in inspect check wal; do
  scratch_kb "$command" "$BIN" "$command" "$STORE"
  scratch_kb "$command --copy" "$BIN" "$command" "$STORE" --copy
done
measure "wal" env STORELENS_TIMINGS=1 "$BIN" wal "$STORE" --format json --no-integrity-check
measure "wal plain" "$BIN" wal "$STORE" --format json
measure "report" "$BIN" report "$STORE" --out "$scratch/report.html" --force
measure "wal small" env STORELENS_TIMINGS=1 "$BIN" wal "$SMALL_STORE" --format json --no-integrity-check
measure "report small" "$BIN" report "$SMALL_STORE" --out "$scratch/report-small.html" --force

# The Core Data checks alone, in-process (STORELENS_TIMINGS: StoreChecker.run, without acquiring,
# hashing or opening the store), median of RUNS runs.
check_times=()
for _ in $(seq "$RUNS"); do
  line=$(STORELENS_TIMINGS=1 "$BIN" check "$STORE" --only "$CD_CHECKS" 2>&1 >/dev/null | grep '^timing checks-seconds=' || true)
  check_times+=("$(echo "$line" | sed -n 's/.*checks-seconds=\([0-9.e-]*\).*/\1/p')")
done
checks_s=$(printf '%s\n' "${check_times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')

# The WAL scan alone, in-process (STORELENS_TIMINGS), median of RUNS runs.
scan_times=()
for _ in $(seq "$RUNS"); do
  line=$(STORELENS_TIMINGS=1 "$BIN" wal "$STORE" --format json --no-integrity-check 2>&1 >/dev/null | grep '^timing ' || true)
  scan_times+=("$(echo "$line" | sed -n 's/.*wal-scan-seconds=\([0-9.]*\).*/\1/p')")
  frames=$(echo "$line" | sed -n 's/.*valid-frames=\([0-9]*\).*/\1/p')
done
wal_scan_s=$(printf '%s\n' "${scan_times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')

# --- Facts about the corpus ---------------------------------------------------------------------
mb() { echo "scale=0; $(stat -c %s "$1") / 1048576" | bc; }
store_mb=$(mb "$STORE"); wal_mb=$(mb "$STORE-wal"); wal_bytes=$(stat -c %s "$STORE-wal")
tgz_mb=$(mb "$TGZ"); zip_mb=$(mb "$ZIP")
media_mb=$(du -sm "$TREE/Documents/Media" | cut -f1)
rm -f "$scratch/s.store-shm"
counts=$(ref_sqlite "SELECT (SELECT count(*) FROM ZNOTE), (SELECT count(*) FROM ZNOTE WHERE Z_ENT = (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'ChecklistNote')), (SELECT count(*) FROM Z_2TAGS), (SELECT count(*) FROM ATRANSACTION), (SELECT count(*) FROM ACHANGE), (SELECT count(*) FROM ZTAG) + (SELECT count(*) FROM ZFOLDER);")
IFS='|' read -r notes checklist joins transactions changes others <<< "$counts"
total_rows=$(( notes + joins + transactions + changes + others ))
wal_commits=$("$BIN" wal "$STORE" --format json --no-integrity-check 2>/dev/null | grep -oE '"commits" *: *[0-9]+' | grep -oE '[0-9]+$' | head -1 || echo "?")
report_kb=$(( $(stat -c %s "$scratch/report.html" 2>/dev/null || echo 0) / 1024 ))
gen_seconds=$(cat "$TREE/.generation-seconds" 2>/dev/null || echo "?")

# --- Verdicts -----------------------------------------------------------------------------------
s() { echo "${SECONDS_OF[$1]}"; }
ratio() { echo "$(s "$1") / $(s "$2")" | bc -l; }
peak() { echo $(( PEAK_KB_OF[$1] / 1024 )); }
verdict() { if [ "$(echo "$1" | bc -l)" = 1 ]; then echo met; else echo MISSED; fi; }
scan_tgz_ratio=$(ratio "scan tar.gz" "bsdtar -tzf"); scan_zip_ratio=$(ratio "scan zip" "bsdtar -tf zip")
only_ratio=$(ratio "check --only Core Data" "quick_check")
scan_libarchive_ratio=$(ratio "scan tar.gz libarchive" "bsdtar -tzf")
checks_ratio=$(echo "$checks_s / $(s quick_check)" | bc -l)
throughput=$(echo "$wal_bytes / $wal_scan_s / 1000000000" | bc -l)
row() { # what, storelens name, reference name, reference tool, target text
  printf '| %s | %.3f s | %.3f s | %s | %.2f× | %s | %s MB | %s MB |\n' "$1" "$(s "$2")" "$(s "$3")" "$4" "$(ratio "$2" "$3")" "$5" "$(peak "$2")" "$(peak "$3")"
}

extra=""
if [ -x scripts/bench-wal.sh ]; then extra=$(BENCH_RUNS=$RUNS BENCH_WAL_MB=$(( WAL_MB > 100 ? WAL_MB : 110 )) scripts/bench-wal.sh 2>/dev/null || echo "(scripts/bench-wal.sh failed)"); fi
backup=""
if [ -x scripts/bench-backup.sh ]; then backup=$(BENCH_RUNS=$RUNS BENCH_CORPUS=$CORPUS scripts/bench-backup.sh 2>/dev/null || echo "(scripts/bench-backup.sh failed)"); fi
recovered=""
if [ -x scripts/bench-recover.sh ]; then recovered=$(BENCH_RUNS=$RUNS BENCH_CORPUS=$CORPUS scripts/bench-recover.sh 2>/dev/null || echo "(scripts/bench-recover.sh failed)"); fi
# scan of 250 and 2,000 containers: the ratio of their times shows scan stays linear in the store count.
many=""
if [ -x scripts/bench-many.sh ]; then many=$(BENCH_RUNS=$RUNS BENCH_CORPUS=$CORPUS scripts/bench-many.sh 2>/dev/null || echo "(scripts/bench-many.sh failed)"); fi

cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ *//' || uname -p)
mem_gb=$(awk '/MemTotal/ {printf "%.0f", $2 / 1048576}' /proc/meminfo 2>/dev/null || echo "?")
{
  echo "# Performance"
  echo
  echo "Written by \`make bench\` ($(date -u +%Y-%m-%d)) on $(nproc) cores ($cpu), $mem_gb GB RAM, $(uname -sm); SQLite $(sqlite3 --version | cut -d' ' -f1), $(bsdtar --version | cut -d' ' -f1-2), $(swift --version 2>/dev/null | head -1 | sed 's/ (.*//'). Release build. Medians of $RUNS runs, each command run once untimed first; ratios are storelens ÷ reference in the same run, so machine noise mostly cancels. Peak memory is the maximum resident set size (\`/usr/bin/time -f %M\`), median of the runs. Figures are never asserted in tests."
  echo
  echo "## Corpus"
  echo
  echo "Generated by \`scripts/bench.sh\` with the project's store builder (\`storelens-fixtures bench-store\`) in ${gen_seconds%.*} s, kept in \`$CORPUS/\` (not in git). Sizes run: \`--rows $ROWS --transactions $TRANSACTIONS --wal-mb $WAL_MB --archive-mb $ARCHIVE_MB\` (the full sizes: at least 1,000,000 rows, 100,000 transactions, a 100 MB WAL and a 500 MB archive)."
  echo
  echo "- \`default.store\`: $notes notes (\`Note\`, $checklist of them its subentity \`ChecklistNote\`), $joins rows in the many-to-many join table \`Z_2TAGS\`, $transactions history transactions with $changes changes; $total_rows rows in all. Main file $store_mb MB; uncheckpointed WAL $wal_mb MB (${wal_commits} commits, ${frames:-?} frames)."
  echo "- The app container around it: the store family, a small Core Data store, a cache database and $media_mb MB of media files, as \`.tar.gz\` ($tgz_mb MB) and \`.zip\` ($zip_mb MB)."
  echo
  echo "## Goals: reading each byte once, memory bound by the output"
  echo
  echo "Before: the figures of the last \`make bench\` before the streaming rewrite (2026-11-30, same corpus sizes, same machine), kept in \`scripts/bench.sh\`; after: this run. Ratios are against the reference measured in this run."
  echo
  echo "| goal | before | after | reference (this run) | ratio after | target | verdict | peak memory after |"
  echo "|---|---|---|---|---|---|---|---|"
  goal() { # what, before text, storelens name, reference name or "-", reference text, ratio target (or "-"), seconds target (or "-"), peak MB target (or "-")
    local r="–" verdicts=() ok
    if [ "$4" != - ]; then r=$(printf '%.2f×' "$(ratio "$3" "$4")"); fi
    if [ "$6" != - ]; then ok=$(verdict "$(ratio "$3" "$4") <= $6"); verdicts+=("ratio $ok"); fi
    if [ "$7" != - ]; then ok=$(verdict "$(s "$3") <= $7"); verdicts+=("time $ok"); fi
    if [ "$8" != - ]; then ok=$(verdict "$(peak "$3") <= $8"); verdicts+=("memory $ok"); fi
    local target=""
    [ "$6" != - ] && target="≤ $6×"
    [ "$7" != - ] && target="${target:+$target, }≤ $7 s"
    [ "$8" != - ] && target="${target:+$target, }≤ $8 MB"
    local reference="–"
    [ "$4" != - ] && reference=$(printf '%.3f s (%s)' "$(s "$4")" "$5")
    local joined="" v
    for v in "${verdicts[@]}"; do joined="${joined:+$joined; }$v"; done
    printf '| %s | %s | %.3f s | %s | %s | %s | %s | %s MB |\n' "$1" "$2" "$(s "$3")" "$reference" "$r" "$target" "$joined" "$(peak "$3")"
  }
  goal "\`rows Note --format jsonl\` ($notes rows, decoded)" "9.561 s, 7.38×, 32 MB" "rows jsonl" "sqlite3 -json" "\`sqlite3 -json\`" 1.5 - 64
  goal "\`rows Note --format csv\` ($notes rows, decoded)" "not measured (same path as jsonl)" "rows csv" "sqlite3 -json" "\`sqlite3 -json\`" 1.5 - 64
  goal "\`wal --format json\` whole command ($wal_commits commits, with SQLite's \`quick_check\` of the WAL view beside the page walk)" "4.258 s, 402 MB" "wal plain" - - - 1.0 96
  goal "\`wal --format json --no-integrity-check\` whole command (the page walk alone)" "4.258 s, 402 MB" "wal" - - - 1.0 96
  goal "\`wal\` on a tenth of the store (memory must not grow with commits)" "not measured" "wal small" - - - - 96
  goal "\`report\` (HTML)" "7.407 s, 404 MB" "report" - - - 2.0 96
  goal "\`report\` on a tenth of the store (memory must not grow with rows)" "not measured" "report small" - - - - 96
  goal "\`inspect\` beside the safe manual workflow (sha256sum the family, \`cp\` it to a private folder, \`sqlite3\` count the tables)" "0.894 s, 148 MB" "inspect" "manual workflow" "manual workflow" 0.6 - -
  goal "\`scan\` of the $zip_mb MB .zip" "0.660 s, 76.85×" "scan zip" "bsdtar -tf zip" "\`bsdtar -tf\`" 2 - -
  goal "\`scan\` of the $zip_mb MB .zip beside what it must do at least (list, then extract the stores)" "not measured" "scan zip" "bsdtar -tf + -xf stores" "\`bsdtar -tf\` + \`bsdtar -xf\` of the store families" - - -
  goal "\`check\` whole command (quick_check, then every Core Data check)" "0.795 s, 2.14×" "check" "quick_check" "\`PRAGMA quick_check\`" 1.2 - -
  echo
  echo "## Reading the store where it lies"
  echo
  echo "Every command reads a store in place through storelens's read-only SQLite VFS (docs/safety.md); \`--copy\` copies it into the private working folder first, as every command did before. Before: \`--copy\` in this run; after: in place."
  echo
  echo "| goal | before (--copy) | after (in place) | reference (this run) | ratio after | target | verdict | peak memory before → after |"
  echo "|---|---|---|---|---|---|---|---|"
  place() { # what, name, reference name, reference text, ratio target
    local r ok
    r=$(ratio "$2" "$3"); ok=$(verdict "$r <= $5")
    printf '| %s | %.3f s (%.2f×) | %.3f s | %.3f s (%s) | %.2f× | ≤ %s× | %s | %s → %s MB |\n' "$1" "$(s "$2 --copy")" "$(ratio "$2 --copy" "$3")" "$(s "$2")" "$(s "$3")" "$4" "$r" "$5" "$ok" "$(peak "$2 --copy")" "$(peak "$2")"
  }
  place "\`inspect\` beside the safe manual workflow" "inspect" "manual workflow" "manual workflow" 0.45
  place "\`check\` beside \`PRAGMA integrity_check\`" "check" "integrity_check" "\`PRAGMA integrity_check\`" 0.8
  printf '| `check` beside `PRAGMA quick_check` (reported) | %.3f s (%.2f×) | %.3f s | %.3f s (`PRAGMA quick_check`) | %.2f× | none set | – | %s → %s MB |\n' "$(s "check --copy")" "$(ratio "check --copy" quick_check)" "$(s check)" "$(s quick_check)" "$(ratio check quick_check)" "$(peak "check --copy")" "$(peak check)"
  printf '| the fixed cost of any command (`check --only wal-missing`) | %.3f s | %.3f s | – | – | none set | – | %s → %s MB |\n' "$(s "check --only wal-missing --copy")" "$(s "check --only wal-missing")" "$(peak "check --only wal-missing --copy")" "$(peak "check --only wal-missing")"
  echo
  echo "| working folder used on the ${store_mb} MB store with its ${wal_mb} MB WAL | --copy | in place | target | verdict |"
  echo "|---|---|---|---|---|"
  for command in inspect check wal; do
    printf '| `%s` | %s KB | %s KB | ≤ 1024 KB | %s |\n' "$command" "${SCRATCH_KB_OF[$command --copy]}" "${SCRATCH_KB_OF[$command]}" "$(verdict "${SCRATCH_KB_OF[$command]} <= 1024")"
  done
  echo
  echo "Where the time goes (profiles of a release build with \`perf record -g\`, on a 200,000-row store of the same shape and a 50 MB zip holding it; shares of the samples):"
  echo
  echo "- \`rows\` jsonl/array/csv/tsv are written by \`RowScan\` + \`RowBytesEncoder\`: each cell read with \`sqlite3_column_*\` and written as bytes into a 64 KiB block (no \`Row\`, \`DecodedRow\`, \`JSONValue\` or String per common value; one \`write\` per block, not per row). In the profile the fixed cost of every command (SHA-256 before and after, the copy: about a quarter of the samples) and SQLite stepping the rows lead; the encoder's own functions (JSON strings, UUIDs, dates, array appends) about 15 %."
  echo "- \`scan\` of a .zip: \`bsdtar -tf\` reads only the central directory; scan extracts the store families, and inflating them (zlib, with its CRC: 41 % of the samples), writing them into the scratch folder (the kernel: 39 %) and hashing them (SHA-256: 10 %) are nearly all its time; libarchive's own reading of the other entries is 0.4 %. Since the streaming rewrite scan reads the zip through its central directory (docs/scan.md) and inflates the stores with ISA-L; the rows below put it beside \`bsdtar -tf\` plus \`bsdtar -xf\` of the stores, the least that extracting them costs. 2× \`bsdtar -tf\` alone is out of reach while the stores must be extracted and hashed."
  echo "- \`wal\` and \`report\`: before the streaming rewrite the main file and the WAL were read into memory whole (402 MB) and every commit re-walked each b-tree it wrote in full (60 % of \`wal\`'s time in a profile), and an image of commit 0 and of the last commit was written (500 MB of writes). Now the page walk reads the working copy with \`pread\` a page at a time and keeps every subtree a commit did not write (docs/wal.md), and commit 0 and the last commit are the working copy's own two views. What is left of \`wal\` is the fixed cost (hash while copying, after-hash) and the page walk; since then SQLite's \`quick_check\` of the WAL view runs beside the walk on a connection of its own instead of after it. \`report\` runs \`inspect\`, the history timeline and writers table and every check: with \`STORELENS_TIMINGS\` the largest parts are check's index comparison (above), \`quick_check\`, and the writers summary over a million history changes (2.7 s before it grouped the changes per transaction, 0.7 s now). Since the streaming rewrite each store's parts run on two threads (\`quick_check\` and the index comparison, itself on two connections; the Core Data checks, history and the WAL analysis on the other, which then takes the counts, reusing that comparison instead of their quick one; docs/report.md), about 6 s of CPU time (before that change: 6.1 s in 3 s); 2 s is out of reach while the report runs every check on a 1M-row store, unless the checks' table scans and the index comparison share their passes."
  echo "- \`inspect\`: before, the tables the WAL changed were checked with SQLite's \`integrity_check(T)\`, a b-tree descent per row and index (\`sqlite3BtreeIndexMoveto\`), about 2 s of its 4–5 s on this store, and history's single-entity tables were counted with a sort. Now those tables are checked where the WAL wrote them (\`WALPageAgreement\`, docs/inspect.md: on this store 787 pages, 0.4 s, one statement per index and page), a table of one entity is counted in one pass without a sort, the rows with text keys are looked for only where the count cannot prove there are none (on this store nowhere: two scans fewer), and what is left is SQLite counting both views (read in place, the hashes before and after are taken beside the work). \`STORELENS_TIMINGS=1\` prints every SQL statement of 10 ms or more."
  echo "- \`check\`: the whole command pays the fixed cost (the \`check --only wal-missing\` row below) besides \`quick_check\` and the Core Data checks, which alone take about the time of \`PRAGMA quick_check\` (the in-process row below). For \`wal-mismatch\` the integrity task then compares every row of the tables the WAL changed with each of their indexes (what quick_check leaves out): since the streaming rewrite as two sequential passes summed as keyed-hash multisets (\`IndexAgreement\`, docs/check.md) instead of SQLite's seek per row and index, here ZNOTE, Z_2TAGS, ACHANGE and ATRANSACTION, 3 million rows and 9 indexes read once each. That comparison reads more than quick_check's own pass over the file, so 1.2× is out of reach while check compares indexes with their tables; the integrity task took 5.5 s before and 2.7 s after that change (\`STORELENS_TIMINGS\`); since then the tables are compared two at a time on two connections, so the second core, idle once the Core Data checks end, takes half of them. Since reading in place (the table above), each side of that comparison is summed inside SQLite by an aggregate function instead of handing a million rows out one by one (a unique index's duplicate test no longer builds an array per entry), the Core Data checks count a table's to-one targets, join rows and history transactions in the scan that counts its single-row conditions (one join per target instead of a query per check), that scan also sums the table's side of the comparison, and the largest tables are compared first: in one measurement on this store 3.3 s of CPU time before (user and system), 2.85 s after, and the last table no longer finishes on one core alone."
  echo
  echo "## storelens beside the reference tools"
  echo
  echo "| what | storelens | reference | reference tool | ratio | target | peak memory storelens | peak memory reference |"
  echo "|---|---|---|---|---|---|---|---|"
  row "scan of the $tgz_mb MB container .tar.gz" "scan tar.gz" "bsdtar -tzf" "\`bsdtar -tzf\`" "≤ 1.15× ($(verdict "$scan_tgz_ratio <= 1.15")); < 64 MB ($(verdict "$(peak "scan tar.gz") < 64"))"
  row "scan of the same .tar.gz, gzip decoded by libarchive's own filter (\`STORELENS_GZIP=libarchive\`; macOS builds)" "scan tar.gz libarchive" "bsdtar -tzf" "\`bsdtar -tzf\`" "none set (≤ 1.15× would be $(verdict "$scan_libarchive_ratio <= 1.15")); < 64 MB ($(verdict "$(peak "scan tar.gz libarchive") < 64"))"
  row "scan of the $zip_mb MB container .zip (through its central directory)" "scan zip" "bsdtar -tf zip" "\`bsdtar -tf\`" "≤ 2× ($(verdict "$scan_zip_ratio <= 2")): \`bsdtar -t\` reads only the central directory, scan also reads every entry's first bytes and extracts and hashes the stores; < 64 MB ($(verdict "$(peak "scan zip") < 64"))"
  row "scan of the same .zip beside listing it and extracting its stores" "scan zip" "bsdtar -tf + -xf stores" "\`bsdtar -tf\` + \`bsdtar -xf\` of the store families into a fresh folder" "none set"
  row "scan of the same .zip, read entry by entry (\`STORELENS_ZIP=stream\`, as before the central-directory read)" "scan zip streaming" "bsdtar -tf + -xf stores" "\`bsdtar -tf\` + \`bsdtar -xf\` of the store families into a fresh folder" "none set"
  row "inspect (every entity counted with and without the WAL)" "inspect" "sqlite3 counts" "\`sqlite3\` counting the same tables on a copy" "none set"
  row "\`rows Note --format jsonl\` ($notes rows, decoded)" "rows jsonl" "sqlite3 -json" "\`sqlite3 -json 'SELECT * FROM ZNOTE'\` on a copy" "none set"
  row "check (quick_check, then every Core Data check)" "check" "quick_check" "\`sqlite3 'PRAGMA quick_check'\` on a copy" "none set"
  row "check --only the Core Data checks (all but sqlite-integrity), whole command" "check --only Core Data" "quick_check" "\`sqlite3 'PRAGMA quick_check'\` on a copy" "≤ 2× ($(verdict "$only_ratio <= 2"))"
  printf '| the Core Data checks alone, in-process (the checks of the row above, without acquiring, hashing and opening the store) | %.3f s | %.3f s | `sqlite3 '"'"'PRAGMA quick_check'"'"'` on a copy | %.2f× | ≤ 2× (%s) | – | – |\n' "$checks_s" "$(s quick_check)" "$checks_ratio" "$(verdict "$checks_ratio <= 2")"
  echo
  echo "| what | time | result | target | peak memory |"
  echo "|---|---|---|---|---|"
  printf '| WAL scan of the %s MB WAL (every frame: salts, cumulative checksum), in-process | %.3f s | %.2f GB/s | ≥ 1 GB/s (%s) | – |\n' "$wal_mb" "$wal_scan_s" "$throughput" "$(verdict "$throughput >= 1")"
  printf '| `storelens wal` whole command on the corpus store | %.3f s | %s commits | none set | %s MB |\n' "$(s wal)" "$wal_commits" "$(peak wal)"
  printf '| `storelens report` of the corpus store (HTML) | %.3f s | %s KB | < 5 MB (%s) | %s MB |\n' "$(s report)" "$report_kb" "$(verdict "$report_kb < 5120")" "$(peak report)"
  printf '| `check --only wal-missing`: the fixed cost of any command on this store (SHA-256 of %s MB before and after, WAL read, open; read in place) | %.3f s | – | none set | %s MB |\n' "$(( store_mb + wal_mb ))" "$(s "check --only wal-missing")" "$(peak "check --only wal-missing")"
  echo
  net=$(echo "($(s "check --only Core Data") - $(s "check --only wal-missing")) / $(s quick_check)" | bc -l)
  printf 'Net of that fixed cost, the Core Data checks take %.2f× the time of `PRAGMA quick_check` (%.3f s against %.3f s). The %s MB WAL is read into memory only by the commands that judge it frame by frame (inspect, wal, report); the others read its 32-byte header.\n' "$net" "$(echo "$(s "check --only Core Data") - $(s "check --only wal-missing")" | bc -l)" "$(s quick_check)" "$wal_mb"
  echo
  echo "What each side does: every storelens command hashes its inputs (SHA-256, before and after; \`check\` hashes them again on a background thread beside its checks, then compares every file's identity at the end), reads the store where it lies through its read-only VFS (\`--copy\`: copies the store family into a private working folder and opens only the copy); the references read a copy made once beforehand (its \`-shm\` removed before each run, so SQLite rebuilds the wal-index from the WAL as it must on a store just pulled off a device). \`check\` runs its checks on two threads, each with its own connection to the working copy; \`PRAGMA quick_check\` runs on one. \`scan\` streams the archive once (a zip: reads its central directory, then each entry's first bytes), sniffs every entry and extracts the store families, hashing and writing them on a second thread; on Linux it decodes a .tar.gz's gzip layer with ISA-L and lets libarchive read the tar; \`bsdtar -t\` only lists names (for a zip, from the central directory). \`inspect\` counts every entity twice (with the WAL applied and in the main file alone). \`rows\` decodes every value (dates, UUIDs, relationships as \`Entity#pk\`) and resolves entity names. \`check --only\` runs the Core Data checks: $CD_CHECKS."
  if [ -n "$extra" ]; then echo; echo "$extra"; fi
  if [ -n "$backup" ]; then echo; echo "$backup"; fi
  if [ -n "$recovered" ]; then echo; echo "$recovered"; fi
  if [ -n "$many" ]; then echo; echo "## Many stores"; echo; echo "$many"; fi
} > docs/performance.md
cat docs/performance.md
