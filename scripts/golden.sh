#!/usr/bin/env bash
# scripts/golden.sh: records what every command prints, in every format, on the demo container,
# every genuine store in ../shared/fixtures/real and a small bench store, so that a change meant to
# keep every output the same (moving work between layers, splitting a function) can be checked
# byte for byte:
#
#   scripts/golden.sh .build/golden/before        # on the commit before the change
#   scripts/golden.sh .build/golden/after         # after it
#   diff -r .build/golden/before .build/golden/after
#
# One file per run, named after the input, the store and the arguments: the exit status, then
# stdout, then stderr. A file a command writes (export, recover --out, wal --out, repair --out and
# --log, report --out, scan --evidence) is recorded after it: SQLite files as `sqlite3 .dump`, the
# rest as they are. Inputs are read where they lie (every command leaves them byte-identical);
# outputs go to a work folder whose path is masked, so that paths printed in two recordings agree.
# What differs from run to run whatever the code (the build's commit, durations) is masked: see
# `normalise` below.
#
# Options: --bin PATH (default .build/release/storelens, built when missing), --rows-limit N
# (rows per entity, default 20), --quick (the demo and three genuine stores only).
set -uo pipefail
cd "$(dirname "$0")/.."

OUT=""
BIN=.build/release/storelens
GEN=.build/release/storelens-fixtures
LIMIT=20
QUICK=0
while [ $# -gt 0 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --rows-limit) LIMIT=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    -*) echo "golden.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) OUT=$1; shift ;;
  esac
done
[ -n "$OUT" ] || { echo "golden.sh: name the folder to record into (see --help)" >&2; exit 2; }
[ -e "$OUT" ] && { echo "golden.sh: $OUT exists; name a new folder" >&2; exit 2; }
if [ ! -x "$BIN" ] || [ ! -x "$GEN" ]; then
  ${SWIFT:-swift} build -c release >&2 || exit 1
fi
for tool in sqlite3 python3; do command -v "$tool" >/dev/null || { echo "golden.sh: $tool is missing (make deps installs it)" >&2; exit 1; }; done

# Inputs of our own, made once and kept (the bench store is generated, so two recordings must read
# the same file): a small bench store with a WAL and history.
INPUTS=.build/golden-inputs
if [ ! -f "$INPUTS/.complete" ]; then
  rm -rf "$INPUTS"; mkdir -p "$INPUTS/bench"
  "$GEN" bench-store "$INPUTS/bench/default.store" 3000 100 1MB >/dev/null || exit 1
  touch "$INPUTS/.complete"
fi

# A work folder of its own (two recordings may run at once); its path is masked in what is recorded,
# and always as long (26 bytes), as `report` prints the size of a file that holds it.
WORK=$(mktemp -d /tmp/storelens-gold-XXXXXX) || exit 3
mkdir -p "$WORK/tmp" "$OUT" || exit 3
export TMPDIR="$WORK/tmp" TZ=UTC LC_ALL=C

# What no code change can keep the same: the build's version line and measured durations.
# Timestamps of the recording day (export's exportedAt, a batch line's startedAt, the report's
# "generated") are masked; no store here holds a date of today.
TODAY=$(date -u +%Y-%m-%d)
normalise() {
  sed -E -e 's/("(seconds|durationSeconds|elapsedSeconds)": ?)[0-9.e+-]+/\1<seconds>/g' \
         -e "s/${TODAY}T[0-9:.]+Z/<now>/g" \
         -e "s#$WORK#<work>#g"
}

safe_name() { printf '%s' "$*" | tr -c 'A-Za-z0-9._=-' '_' | cut -c1-150; }

# record LABEL ARGS...: runs storelens ARGS and writes OUT/LABEL.txt.
record() {
  local label=$1; shift
  local file="$OUT/$(safe_name "$label").txt"
  rm -rf "$WORK/out"; mkdir -p "$WORK/out"
  "$BIN" "$@" > "$WORK/stdout" 2> "$WORK/stderr" < /dev/null
  local status=$?
  {
    echo "# storelens $*" | normalise
    echo "# exit $status"
    echo "--- stdout"; normalise < "$WORK/stdout"
    echo "--- stderr"; normalise < "$WORK/stderr"
    for written in $(cd "$WORK/out" && find . -type f | sort); do
      echo "--- file $written"
      if [ "$(head -c 15 "$WORK/out/$written")" = "SQLite format 3" ]; then
        sqlite3 "$WORK/out/$written" .dump | normalise
      else
        normalise < "$WORK/out/$written"
      fi
    done
  } > "$file"
  leftover=$(find "$WORK/tmp" -mindepth 1 -maxdepth 1 | head -1)
  [ -z "$leftover" ] || { echo "golden.sh: storelens $* left $leftover" >&2; rm -rf "$WORK/tmp"/*; }
}

# The stores of an input (`scan --format json`), one path per line.
stores_of() { "$BIN" scan "$1" --format json 2>/dev/null | python3 -c 'import json,sys
try: print("\n".join(s["path"] for s in json.load(sys.stdin)["stores"] if not s.get("problem")))
except Exception: pass'; }

# The entity names of one store (`schema --format json`), one per line.
entities_of() { "$BIN" schema "$1" --store "$2" --format json 2>/dev/null | python3 -c 'import json,sys
try: print("\n".join(e["name"] for e in json.load(sys.stdin)["entities"]))
except Exception: pass'; }

# Every command that reads the whole input.
whole_input() {
  local name=$1 input=$2 manifest=$3
  for f in text json markdown; do record "$name scan $f" scan "$input" --format "$f"; done
  record "$name scan evidence" scan "$input" --evidence "$WORK/out/evidence.json"
  for f in text json markdown; do record "$name inspect $f" inspect "$input" --format "$f"; done
  for f in text json markdown; do record "$name check $f" check "$input" --format "$f"; done
  record "$name check full json" check "$input" --full --format json
  if [ -n "$manifest" ]; then
    for f in text json markdown; do record "$name audit $f" audit "$input" --manifest "$manifest" --format "$f"; done
  else
    record "$name audit" audit "$input"  # no manifest: the refusal is an output too
  fi
  record "$name report" report "$input" ${manifest:+--manifest "$manifest"} --out "$WORK/out/report.html"
  record "$name check jsonl" check "$input" --jsonl "$WORK/out/check.jsonl"
  cp "$WORK/out/check.jsonl" "$WORK/check.jsonl" 2>/dev/null || : > "$WORK/check.jsonl"
  for f in text json; do record "$name merge $f" merge "$WORK/check.jsonl" --format "$f"; done
}

# Every command that reads one store, in every format.
per_store() {
  local name=$1 input=$2 store=$3
  local s=(--store "$store") tag="$name [$store]"
  for f in text json; do record "$tag schema $f" schema "$input" "${s[@]}" --format "$f"; done
  for f in text json jsonl csv; do record "$tag history $f" history "$input" "${s[@]}" --format "$f"; done
  for f in text json markdown; do record "$tag wal $f" wal "$input" "${s[@]}" --format "$f"; done
  for f in text json jsonl csv; do record "$tag wal diff $f" wal "$input" "${s[@]}" --diff --format "$f"; done
  record "$tag wal diff each json" wal "$input" "${s[@]}" --diff --each --format json
  record "$tag wal out" wal "$input" "${s[@]}" --out "$WORK/out/as-of.sqlite"
  for f in text json jsonl csv; do record "$tag recover $f" recover "$input" "${s[@]}" --format "$f"; done
  record "$tag recover out" recover "$input" "${s[@]}" --out "$WORK/out/recovered.sqlite"
  for f in text json; do record "$tag export $f" export "$input" "${s[@]}" --out "$WORK/out/export.sqlite" --format "$f"; done
  for f in csv jsonl; do record "$tag timeline $f" timeline "$input" "${s[@]}" --format "$f"; done
  for f in text json markdown; do record "$tag lint $f" lint "$input" "${s[@]}" --format "$f"; done
  # Against its own model: every entity unchanged, the data checked all the same.
  for f in text json markdown; do record "$tag migration $f" migration "$input" "${s[@]}" --to "$input/$store" --format "$f"; done
  for f in text json; do record "$tag repair plan $f" repair "$input" "${s[@]}" --plan --format "$f"; done
  record "$tag repair out" repair "$input" "${s[@]}" --out "$WORK/out/repaired.sqlite" --log "$WORK/out/repair.json"
  local n=0
  while IFS= read -r entity; do
    [ -n "$entity" ] || continue
    if [ "$n" -lt 2 ]; then
      for f in table json jsonl array csv tsv; do record "$tag rows $entity $f" rows "$input" "$entity" "${s[@]}" --limit "$LIMIT" --format "$f"; done
    else
      record "$tag rows $entity json" rows "$input" "$entity" "${s[@]}" --limit "$LIMIT" --format json
    fi
    n=$((n + 1))
  done < <(entities_of "$input" "$store")
}

run_input() {
  local name=$1 input=$2 manifest=${3:-}
  echo "golden.sh: $name" >&2
  whole_input "$name" "$input" "$manifest"
  while IFS= read -r store; do
    [ -n "$store" ] && per_store "$name" "$input" "$store"
  done < <(stores_of "$input")
}

run_input demo Fixtures/demo-container Fixtures/demo-container.storelens.json
for f in text json markdown; do
  record "demo migration legacy to swiftdata $f" migration "Fixtures/demo-container/Library/Application Support/Model.sqlite" \
    --to "Fixtures/demo-container/Library/Application Support/default.store" --format "$f"
done
run_input bench "$INPUTS/bench"
REAL=../shared/fixtures/real
if [ -d "$REAL" ]; then
  for folder in "$REAL"/*/; do
    name=$(basename "$folder")
    if [ "$QUICK" -eq 1 ]; then
      case $name in swiftdata-resources|notes-macos15-wal|knowledgec-tombstones) ;; *) continue ;; esac
    fi
    run_input "$name" "${folder%/}"
  done
else
  echo "golden.sh: $REAL is not here; recorded the demo and the bench store only" >&2
fi
rm -rf "$WORK"
echo "golden.sh: $(find "$OUT" -type f | wc -l) runs recorded in $OUT" >&2
