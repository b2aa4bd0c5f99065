#!/usr/bin/env bash
# The recover part of `make bench` (called by scripts/bench.sh, or on its own after
# `swift build -c release`): `storelens recover` beside `sqlite3 .recover` and sqlite-dissect on the
# same generated stores, in the same run. Prints a markdown section on stdout.
#
# Corpus (bench-corpus/recover-ROWS/, built once): a Core Data store of BENCH_RECOVER_ROWS notes
# (default 100000) written by the store builder, then changed with SQLite itself by
# scripts/bench-recover.py: deleted records in freed cells (freeblocks), on freelist pages, and
# deleted by committed WAL frames; the script knows every deleted record and scores each tool's
# output against it (recall per source; precision over what the tool offered as recovered).
#
# The peers:
#   - `sqlite3 .recover`: Debian's sqlite3 is built without the sqlite_dbpage table .recover needs
#     ("no such table: sqlite_dbpage"), so this script builds the same SQLite version's shell from
#     Debian's source package with it (apt-get source, a private apt list, nothing of the system's
#     apt configuration changed) into bench-corpus/tools/; skipped with the reason when it cannot.
#   - sqlite-dissect (PyPI) in the virtualenv .build/bench-venv, with carving on (`-c`) and the
#     Note table chosen (`-b ZNOTE`); skipped with the reason when PyPI cannot be reached.
# Figures are never asserted in tests.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/release/storelens}
GEN=${GEN:-.build/release/storelens-fixtures}
RUNS=${BENCH_RUNS:-3}
ROWS=${BENCH_RECOVER_ROWS:-100000}
CORPUS=${BENCH_CORPUS:-bench-corpus}
VENV=.build/bench-venv
WORK="$CORPUS/recover-$ROWS"
TOOLS="$CORPUS/tools"
for tool in "$BIN" "$GEN"; do [ -x "$tool" ] || { echo "bench-recover.sh: $tool is missing; run 'swift build -c release' first" >&2; exit 1; }; done
mkdir -p "$TOOLS"

# --- The peers -----------------------------------------------------------------------------------
RECOVER_SQLITE="$TOOLS/sqlite3-dbpage"
recover_note=""
if [ ! -x "$RECOVER_SQLITE" ]; then
  (
    set -e
    version=$(dpkg-query -W -f '${Version}' sqlite3 2>/dev/null || true)
    [ -n "$version" ] || { echo "sqlite3 is not installed from Debian" >&2; exit 1; }
    src=$(mktemp -d); trap 'rm -rf "$src"' EXIT
    mkdir -p "$src/lists/partial"
    . /etc/os-release
    echo "deb-src http://deb.debian.org/debian $VERSION_CODENAME main" > "$src/sources.list"
    opts=(-o "Dir::Etc::SourceList=$src/sources.list" -o Dir::Etc::SourceParts=/dev/null -o "Dir::State::Lists=$src/lists")
    apt-get "${opts[@]}" -qq update >/dev/null
    command -v tclsh >/dev/null || apt-get install -y -qq tcl >/dev/null
    (cd "$src" && apt-get "${opts[@]}" -qq source --download-only "sqlite3=$version" >/dev/null 2>&1)
    tar -xf "$src"/sqlite3_*.orig.tar.xz -C "$src"
    tree=$(find "$src" -maxdepth 1 -type d -name 'sqlite3-*' | head -1)
    mkdir -p "$tree/bld"
    (cd "$tree/bld" && ../configure --disable-tcl --enable-readline=no >/dev/null 2>&1 \
      && make -j2 sqlite3 CFLAGS="-O2 -DSQLITE_ENABLE_DBPAGE_VTAB" >/dev/null 2>&1)
    cp "$tree/bld/sqlite3" "$RECOVER_SQLITE"
  ) 2>"$TOOLS/sqlite3-dbpage.log" || recover_note="skipped: no sqlite3 with the sqlite_dbpage table could be built ($(tail -1 "$TOOLS/sqlite3-dbpage.log" 2>/dev/null)); Debian's sqlite3 .recover fails with 'no such table: sqlite_dbpage'"
fi
[ -n "$recover_note" ] && echo "bench-recover.sh: sqlite3 .recover $recover_note" >&2
dissect_note=""
if [ ! -x "$VENV/bin/sqlite_dissect" ]; then
  { python3 -m venv "$VENV" && "$VENV/bin/pip" install --quiet --disable-pip-version-check sqlite-dissect; } >/dev/null 2>&1 \
    || dissect_note="skipped: sqlite-dissect could not be installed from PyPI into $VENV"
fi
[ -n "$dissect_note" ] && echo "bench-recover.sh: $dissect_note" >&2

# --- The corpus ----------------------------------------------------------------------------------
if [ ! -f "$WORK/.complete" ]; then
  echo "generating the recover corpus: $ROWS notes…" >&2
  rm -rf "$WORK"; mkdir -p "$WORK"
  "$GEN" bench-store "$WORK/source.store" "$ROWS" 1000 0MB >/dev/null
  sqlite3 "$WORK/source.store" 'PRAGMA journal_mode = DELETE' >/dev/null   # our own copy: into the main file
  python3 scripts/bench-recover.py make "$WORK/source.store" "$WORK"
  touch "$WORK/.complete"
fi

# --- Measuring -----------------------------------------------------------------------------------
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
RUN="$WORK/run"
# One timed run of a tool on a fresh copy of a case: prints "seconds peak-KB user-seconds system-seconds";
# leaves its output in $RUN/out. CPU time (user + system) is the figure a loaded machine reproduces.
timed() { # case tool
  rm -rf "$RUN"; mkdir -p "$RUN/in" "$RUN/out"; cp "$WORK/$1"/* "$RUN/in/"; sync
  local t="$RUN/time"
  case $2 in
    storelens) /usr/bin/time -f '%e %M %U %S' -o "$t" "$BIN" recover "$RUN/in/default.store" --state deleted,carved --format jsonl > "$RUN/out/recovered.jsonl" || true ;;
    sqlite-recover) /usr/bin/time -f '%e %M %U %S' -o "$t" "$RECOVER_SQLITE" "$RUN/in/default.store" .recover > "$RUN/out/recover.sql" || true ;;
    sqlite-dissect) /usr/bin/time -f '%e %M %U %S' -o "$t" "$VENV/bin/sqlite_dissect" "$RUN/in/default.store" -c -f -d "$RUN/out" -e csv -b ZNOTE >/dev/null 2>&1 || true ;;
  esac
  tail -1 "$t"   # after "Command exited with non-zero status N", if any
}
score() { # case tool
  case $2 in
    storelens) python3 scripts/bench-recover.py score storelens "$RUN/out/recovered.jsonl" "$WORK/truth.json" "$1" ;;
    sqlite-recover) "$RECOVER_SQLITE" "$RUN/out/recover.db" < "$RUN/out/recover.sql" >/dev/null 2>&1 || true
      python3 scripts/bench-recover.py score sqlite-recover "$RUN/out/recover.db" "$WORK/truth.json" "$1" ;;
    sqlite-dissect) python3 scripts/bench-recover.py score sqlite-dissect "$RUN/out/default.store-ZNOTE.csv" "$WORK/truth.json" "$1" ;;
  esac
}
declare -A SECONDS_OF KB_OF SCORE_OF CPU_OF
for case in main wal; do
  for tool in storelens sqlite-recover sqlite-dissect; do
    [ "$tool" = sqlite-recover ] && [ -n "$recover_note" ] && continue
    [ "$tool" = sqlite-dissect ] && [ -n "$dissect_note" ] && continue
    s=(); m=(); c=()
    for _ in $(seq "$RUNS"); do
      read -r sec kb user sys < <(timed "$case" "$tool"); s+=("$sec"); m+=("$kb"); c+=("$(echo "${user:-0} + ${sys:-0}" | bc -l)")
    done
    SECONDS_OF[$case,$tool]=$(printf '%s\n' "${s[@]}" | median)
    CPU_OF[$case,$tool]=$(printf '%.2f\n' "${c[@]}" | median)
    KB_OF[$case,$tool]=$(printf '%s\n' "${m[@]}" | median)
    SCORE_OF[$case,$tool]=$(score "$case" "$tool")
  done
done
rm -rf "$RUN"

# --- The table -----------------------------------------------------------------------------------
field() { python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }
echo "## Recovering deleted records"
echo
echo "A Core Data store of $ROWS notes written by the store builder, then changed with SQLite itself (secure_delete off) by \`scripts/bench-recover.py\`: **main** has every 10th note deleted (freed cells, freeblocks inside leaf pages) and a run of a tenth of the keys deleted (whole leaf pages on the freelist), checkpointed into the main file; **wal** has the notes with Z_PK % 10 = 5 deleted by a committed WAL transaction. The script knows every deleted record: a tool recovers one when it gives it back with its key and title (a record whose key was lost counts by its title, which is unique). Medians of $RUNS runs on fresh copies; peak memory is the maximum resident set size."
echo
echo "Commands: \`storelens recover STORE --state deleted,carved --format jsonl\`; \`sqlite3 STORE .recover\` (SQLite $(sqlite3 --version | cut -d' ' -f1), its rows in \`lost_and_found\`); \`sqlite_dissect STORE -c -f -b ZNOTE -e csv\` (carving free space and, with \`-f\`, freelist pages: each peer with the options that give it its best chance). Records a tool offered that are an unchanged copy of a live record are not counted either way."
echo
echo "| case | source | storelens | sqlite3 .recover | sqlite-dissect | goal |"
echo "|---|---|---|---|---|---|"
cell() { # case tool source
  local sc=${SCORE_OF[$1,$2]:-}
  [ -z "$sc" ] && { echo "–"; return; }
  field "$sc" "'{}/{} ({:.3f})'.format(d['sources']['$3'][0], d['sources']['$3'][1], d['sources']['$3'][0] / d['sources']['$3'][1])"
}
recall() { local sc=${SCORE_OF[$1,$2]:-}; [ -z "$sc" ] && { echo 0; return; }; field "$sc" "d['sources']['$3'][0]"; }
for pair in main:freeblock main:freelist wal:wal-deleted; do
  case=${pair%%:*}; src=${pair#*:}
  ours=$(recall "$case" storelens "$src"); best=$(( $(recall "$case" sqlite-recover "$src") > $(recall "$case" sqlite-dissect "$src") ? $(recall "$case" sqlite-recover "$src") : $(recall "$case" sqlite-dissect "$src") ))
  verdict=$([ "$ours" -ge "$best" ] && echo met || echo MISSED)
  echo "| $case | $src (recall) | $(cell "$case" storelens "$src") | $(cell "$case" sqlite-recover "$src") | $(cell "$case" sqlite-dissect "$src") | ≥ the best peer ($verdict) |"
done
for case in main wal; do
  row="| $case | precision (offered, wrong) |"
  for tool in storelens sqlite-recover sqlite-dissect; do
    sc=${SCORE_OF[$case,$tool]:-}
    if [ -z "$sc" ]; then row="$row – |"; else row="$row $(field "$sc" "'{:.3f} ({}, {})'.format((d['offered'] - d['wrong']) / d['offered'] if d['offered'] else 1, d['offered'], d['wrong'])") |"; fi
  done
  p=$(field "${SCORE_OF[$case,storelens]}" "d['wrong']")
  echo "$row 1.0 ($([ "$p" = 0 ] && echo met || echo MISSED)) |"
done
for case in main wal; do
  row="| $case | time |"
  for tool in storelens sqlite-recover sqlite-dissect; do row="$row ${SECONDS_OF[$case,$tool]:-–} s |"; done
  r=${SECONDS_OF[$case,sqlite-recover]:-}
  if [ -n "$r" ]; then ratio=$(echo "${SECONDS_OF[$case,storelens]} / $r" | bc -l); row="$row ≤ 1× .recover: $(printf '%.2f' "$ratio")× ($([ "$(echo "$ratio <= 1" | bc -l)" = 1 ] && echo met || echo MISSED)) |"; else row="$row ≤ 1× .recover (not measured) |"; fi
  echo "$row"
  row="| $case | CPU time (user + system) |"
  for tool in storelens sqlite-recover sqlite-dissect; do row="$row ${CPU_OF[$case,$tool]:-–} s |"; done
  r=${CPU_OF[$case,sqlite-recover]:-}
  if [ -n "$r" ] && [ "$(echo "$r > 0" | bc -l)" = 1 ]; then ratio=$(echo "${CPU_OF[$case,storelens]} / $r" | bc -l); row="$row ≤ 1× .recover: $(printf '%.2f' "$ratio")× ($([ "$(echo "$ratio <= 1" | bc -l)" = 1 ] && echo met || echo MISSED)) |"; else row="$row ≤ 1× .recover (not measured) |"; fi
  echo "$row"
  row="| $case | peak memory |"
  for tool in storelens sqlite-recover sqlite-dissect; do kb=${KB_OF[$case,$tool]:-}; row="$row $([ -n "$kb" ] && echo "$(( kb / 1024 )) MB" || echo –) |"; done
  echo "$row ≤ 64 MB ($([ "$(( ${KB_OF[$case,storelens]} / 1024 ))" -le 64 ] && echo met || echo MISSED)) |"
done
[ -n "$recover_note" ] && { echo; echo "sqlite3 .recover: $recover_note."; }
[ -n "$dissect_note" ] && { echo; echo "sqlite-dissect: $dissect_note."; }
echo
echo "What each tool can see: \`.recover\` reads every page through \`sqlite_dbpage\` (the WAL applied) and puts the cells of pages no table owns (the freelist) into \`lost_and_found\`; it does not look into a page's free space, so a freed cell inside a page in use is not found, nor a row only the main file still holds under a WAL that deleted it. sqlite-dissect carves freeblocks and unallocated space and reads each WAL commit as a version. storelens reads every committed state (a row a commit deleted is a \`deleted\` version) and carves free space, freelist pages and every WAL frame."
