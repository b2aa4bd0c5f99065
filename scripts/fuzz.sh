#!/usr/bin/env bash
# make fuzz: libFuzzer targets for the readers that parse bytes from devices and archives.
#
# SwiftPM cannot build fuzzer executables, so this compiles the library modules the targets need
# straight from Sources/ with swiftc (-sanitize=fuzzer,address: coverage-guided, with
# AddressSanitizer), links each Fuzz/<Name>Fuzz.swift entry point against them, replays the
# regression inputs, then fuzzes each target for FUZZ_SECONDS seconds.
#
#   scripts/fuzz.sh                      every target, FUZZ_SECONDS (default 30) each
#   scripts/fuzz.sh wal manifest         only these targets
#   FUZZ_SECONDS=600 scripts/fuzz.sh wal a longer run (make fuzz-long: every target, 600 s each)
#   FUZZ_SANITIZERS=fuzzer scripts/fuzz.sh   without AddressSanitizer (faster, fewer bugs found)
#
# Corpora: Fuzz/corpus/<target>/ (small hand-made seeds, in git), seeds generated from builder-made
# and real stores (.build/fuzz/seeds/, not in git), the growing working corpus
# (.build/fuzz/corpus/, not in git) and Fuzz/regressions/<target>/ (inputs that once crashed; in
# git, also replayed by `swift test`). A crash leaves its input in .build/fuzz/crashes/<target>/;
# fix the bug, then copy the input into Fuzz/regressions/<target>/.
set -euo pipefail
# The Swift runtime's backtracer and AddressSanitizer both want the crash; let ASan report it.
export SWIFT_BACKTRACE=enable=no
cd "$(dirname "$0")/.."
ROOT=$(pwd)
SECONDS_EACH=${FUZZ_SECONDS:-30}
SANITIZERS=${FUZZ_SANITIZERS:-fuzzer,address}
OUT=${FUZZ_BUILD:-.build/fuzz}
SWIFTC=${SWIFTC:-swiftc}
ALL_TARGETS="wal shm database binary-plist keyed-archive model-cache archive-path backup-path manifest path-pattern gzip-archive store-keys"
TARGETS=${*:-${FUZZ_TARGETS:-$ALL_TARGETS}}

# target -> entry point, modules (in dependency order), -max_len
entry() {
  case $1 in
    wal) echo WALFuzz ;; shm) echo SHMFuzz ;; database) echo DatabaseFuzz ;;
    binary-plist) echo BinaryPlistFuzz ;; keyed-archive) echo KeyedArchiveFuzz ;;
    model-cache) echo ModelCacheFuzz ;; archive-path) echo ArchivePathFuzz ;; backup-path) echo BackupPathFuzz ;;
    manifest) echo ManifestFuzz ;;
    path-pattern) echo PathPatternFuzz ;;
    gzip-archive) echo GzipArchiveFuzz ;; store-keys) echo StoreKeysFuzz ;;
    *) echo "fuzz.sh: unknown target '$1' (targets: $ALL_TARGETS)" >&2; exit 2 ;;
  esac
}
# The modules of Sources/ an entry point needs, dependencies first: the closure of its `import`
# lines (so a module that gains a dependency needs no change here). Swift targets and C targets
# (.c files with an include/ folder) are compiled; system libraries (a module.modulemap) are linked.
kind() {
  if [ -n "$(find "Sources/$1" -name '*.swift' -print -quit 2>/dev/null)" ]; then echo swift
  elif [ -n "$(find "Sources/$1" -name '*.c' -print -quit 2>/dev/null)" ]; then echo c
  fi
}
module_imports() {
  grep -hoE '^(@[A-Za-z_]+ +)*import +[A-Za-z_]+' "$@" 2>/dev/null | awk '{print $NF}' | sort -u | while read -r m; do
    [ -n "$(kind "$m")" ] && echo "$m"
  done
}
modules() {
  local visited=" " order=()
  visit() {
    local m=$1 d
    case "$visited" in *" $m "*) return ;; esac
    visited+="$m "
    if [ "$(kind "$m")" = swift ]; then
      for d in $(module_imports $(find "Sources/$m" -name '*.swift')); do visit "$d"; done
    fi
    order+=("$m")
  }
  for d in $(module_imports "Fuzz/$(entry "$1").swift"); do visit "$d"; done
  echo "${order[@]}"
}
max_len() {
  case $1 in
    wal|database) echo 20000 ;; shm) echo 8192 ;; keyed-archive|binary-plist) echo 32768 ;;
    model-cache) echo 16384 ;; gzip-archive) echo 65536 ;; store-keys) echo 28 ;; *) echo 8192 ;;
  esac
}

for t in $TARGETS; do entry "$t" >/dev/null; done
mkdir -p "$OUT/modules" "$OUT/logs"
INCLUDES=(-I "$OUT/modules")
for d in Sources/*/; do
  m=$(basename "$d")
  if [ -f "$d/module.modulemap" ]; then INCLUDES+=(-I "$d")
  elif [ "$(kind "$m")" = c ] && [ -d "$d/include" ]; then
    # A C target: the module map SwiftPM would generate (its include/ folder as an umbrella).
    mkdir -p "$OUT/cmodules/$m"
    printf 'module %s {\n    umbrella "%s"\n    export *\n}\n' "$m" "$ROOT/Sources/$m/include" > "$OUT/cmodules/$m/module.modulemap"
    INCLUDES+=(-I "$OUT/cmodules/$m")
  fi
done
CLANG=${CLANG:-$(dirname "$(command -v "$SWIFTC")")/clang}
[ -x "$CLANG" ] || CLANG=clang
FLAGS=(-swift-version 6 -parse-as-library -O -g -sanitize="$SANITIZERS")
stamp="$OUT/modules/.sanitizers"
if [ "$(cat "$stamp" 2>/dev/null)" != "$SANITIZERS" ]; then rm -f "$OUT"/modules/*.o; echo "$SANITIZERS" > "$stamp"; fi

# Check the toolchain first: libFuzzer ships with Swift on Linux, but say so plainly if it does not.
probe="$OUT/probe"
mkdir -p "$probe"
printf '@_cdecl("LLVMFuzzerTestOneInput") public func f(_ p: UnsafeRawPointer?, _ n: Int) -> CInt { 0 }\n' > "$probe/p.swift"
if ! "$SWIFTC" "${FLAGS[@]}" "$probe/p.swift" -o "$probe/p" >"$probe/log" 2>&1; then
  echo "fuzz.sh: this toolchain cannot build libFuzzer targets ($SWIFTC -sanitize=$SANITIZERS failed):" >&2
  grep -v 'Cannot export local symbol' "$probe/log" | tail -5 >&2
  exit 1
fi

# A module: every Swift file of Sources/<Module>, one whole-module object, rebuilt when a source changes.
build_module() {
  local name=$1 obj="$OUT/modules/$1.o"
  if [ "$(kind "$name")" = c ]; then build_c_module "$name"; return; fi
  local sources
  mapfile -t sources < <(find "Sources/$name" -name '*.swift' | sort)
  local stale=""
  [ -f "$obj" ] || stale=1
  [ -n "$(find "Sources/$name" -name '*.swift' -newer "$obj" 2>/dev/null)" ] && stale=1
  for d in $(module_imports "${sources[@]}"); do [ "$OUT/modules/$d.swiftmodule" -nt "$obj" ] && stale=1; done
  [ -z "$stale" ] && return 0
  echo "  compiling $name (${#sources[@]} files)"
  if ! "$SWIFTC" "${FLAGS[@]}" "${INCLUDES[@]}" -module-name "$name" -wmo -num-threads 0 \
       -emit-module -emit-module-path "$OUT/modules/$name.swiftmodule" -c "${sources[@]}" -o "$obj" \
       >"$OUT/logs/$name.log" 2>&1; then
    grep -v 'Cannot export local symbol' "$OUT/logs/$name.log" | head -30 >&2
    echo "fuzz.sh: compiling $name failed (log: $OUT/logs/$name.log)" >&2
    exit 1
  fi
}

# A C target: every .c file into one relocatable object, instrumented the same way.
build_c_module() {
  local name=$1 obj="$OUT/modules/$1.o" sources objs=() f
  mapfile -t sources < <(find "Sources/$name" -name '*.c' | sort)
  if [ -f "$obj" ] && [ -z "$(find "Sources/$name" \( -name '*.c' -o -name '*.h' \) -newer "$obj")" ]; then return 0; fi
  echo "  compiling $name (${#sources[@]} C files)"
  local csan=${SANITIZERS/fuzzer/fuzzer-no-link}
  for f in "${sources[@]}"; do
    local o="$OUT/modules/$name-$(basename "$f" .c).c.o"
    "$CLANG" -c -O2 -g -fsanitize="$csan" -I "Sources/$name/include" "$f" -o "$o" >"$OUT/logs/$name.log" 2>&1 \
      || { cat "$OUT/logs/$name.log" >&2; echo "fuzz.sh: compiling $f failed" >&2; exit 1; }
    objs+=("$o")
  done
  ld -r "${objs[@]}" -o "$obj"
}

build_target() {
  local t=$1 e mods objs=()
  e=$(entry "$t"); mods=$(modules "$t")
  for m in $mods; do build_module "$m"; objs+=("$OUT/modules/$m.o"); done
  local bin="$OUT/fuzz-$t"
  local newer=""
  for f in "Fuzz/$e.swift" "${objs[@]}"; do [ "$f" -nt "$bin" ] && newer=1; done
  [ -x "$bin" ] && [ -z "$newer" ] && return 0
  echo "  linking fuzz-$t"
  if ! "$SWIFTC" "${FLAGS[@]}" "${INCLUDES[@]}" -module-name "$e" "Fuzz/$e.swift" "${objs[@]}" \
       -lsqlite3 -larchive -lz -lcrypto $(pkg-config --libs libisal 2>/dev/null) -o "$bin" >"$OUT/logs/fuzz-$t.log" 2>&1; then
    grep -v 'Cannot export local symbol' "$OUT/logs/fuzz-$t.log" | head -30 >&2
    echo "fuzz.sh: linking fuzz-$t failed (log: $OUT/logs/fuzz-$t.log)" >&2
    exit 1
  fi
}

# Seeds made fresh from a builder-made container and, when present, the genuine Apple stores:
# a WAL and -shm, a main file, Z_METADATA's plist, Z_MODELCACHE's blob (deflated and inflated) and a
# manifest. Nothing here is committed; SQLite only ever opens copies.
generate_seeds() {
  local seeds="$OUT/seeds" work
  [ -f "$seeds/.done" ] && [ -n "$(ls -A "$seeds/gzip-archive" 2>/dev/null)" ] && return 0
  command -v sqlite3 >/dev/null || { echo "  (sqlite3 missing: only the committed seeds are used)"; return 0; }
  echo "  generating seeds"
  rm -rf "$seeds"; mkdir -p "$seeds"
  for t in $ALL_TARGETS; do mkdir -p "$seeds/$t"; done
  work=$(mktemp -d); trap 'rm -rf "$work"' RETURN
  # Small SQLite files with 512-byte pages: a WAL with three commits and an unfinished tail.
  sqlite3 "$work/small.db" >/dev/null <<'SQL'
PRAGMA page_size = 512; PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;
.dbconfig no_ckpt_on_close on
CREATE TABLE t (a INTEGER PRIMARY KEY, b TEXT); CREATE INDEX tb ON t (b);
PRAGMA wal_checkpoint(TRUNCATE);
INSERT INTO t (b) VALUES ('one'), ('two'), (hex(randomblob(300)));
INSERT INTO t (b) VALUES ('three'); DELETE FROM t WHERE a = 1;
CREATE TABLE u (x BLOB); INSERT INTO u VALUES (zeroblob(900));
SQL
  cp "$work/small.db-wal" "$seeds/wal/small-wal"
  [ -f "$work/small.db-shm" ] && head -c 4096 "$work/small.db-shm" > "$seeds/shm/small-shm"
  cp "$work/small.db" "$seeds/database/small-main"
  sqlite3 "$work/whole.db" 'PRAGMA page_size = 512; CREATE TABLE t (a, b); CREATE INDEX ta ON t (a); INSERT INTO t VALUES (1, randomblob(2000)), (2, "x"); CREATE VIEW v AS SELECT * FROM t;' >/dev/null
  cp "$work/whole.db" "$seeds/database/whole-db"
  # A builder-made SwiftData-style container (the demo) through the store builder.
  local gen=.build/debug/storelens-fixtures
  [ -x .build/release/storelens-fixtures ] && gen=.build/release/storelens-fixtures
  if [ ! -x "$gen" ]; then swift build --product storelens-fixtures >/dev/null; fi
  "$gen" "$work/fixtures" >/dev/null
  cp "$work/fixtures/demo-container.storelens.json" "$seeds/manifest/demo.json"
  # A small container as .tar.gz: the Core Data store alone, and with its sidecars as two members.
  local abs_seeds
  abs_seeds=$(cd "$seeds" && pwd)
  (cd "$work/fixtures/demo-container" && tar -czf "$abs_seeds/gzip-archive/model.tar.gz" "Library/Application Support/Model.sqlite") || true
  (cd "$work/fixtures/demo-container" && tar -cf "$work/sidecars.tar" --exclude '*.store' --exclude '*.sqlite' "Library/Application Support") \
    && gzip -c "$work/sidecars.tar" > "$abs_seeds/gzip-archive/sidecars.tar.gz" \
    && head -c 4000 "$work/sidecars.tar" | gzip -c > "$abs_seeds/gzip-archive/two-members.tar.gz" \
    && tail -c +4001 "$work/sidecars.tar" | gzip -c >> "$abs_seeds/gzip-archive/two-members.tar.gz" || true
  local n=0
  while IFS= read -r store; do
    n=$((n + 1))
    extract_store_seeds "$store" "builder$n" "$work"
  done < <(find "$work/fixtures/demo-container" -type f \( -name '*.store' -o -name '*.sqlite' \))
  local real
  real=${STORELENS_REAL_FIXTURES:-../shared/fixtures/real}
  if [ -d "$real" ]; then
    while IFS= read -r store; do
      n=$((n + 1))
      extract_store_seeds "$store" "real$n" "$work"
    done < <(find "$real" -type f \( -name '*.store' -o -name '*.sqlite' \))
  fi
  touch "$seeds/.done"
}

# Seeds from one store; the store family is copied first and sqlite3 reads only the copy.
extract_store_seeds() {
  local store=$1 tag=$2 work=$3 seeds="$OUT/seeds"
  local copy="$work/copy-$tag"
  mkdir -p "$copy"
  cp "$store" "$copy/s.db"
  [ -f "$store-wal" ] && [ "$(stat -c %s "$store-wal")" -le 65536 ] && cp "$store-wal" "$seeds/wal/$tag-wal"
  [ -f "$store-wal" ] && cp "$store-wal" "$copy/s.db-wal"
  [ -f "$store-shm" ] && head -c 8192 "$store-shm" > "$seeds/shm/$tag-shm"
  sqlite3 "$copy/s.db" "SELECT writefile('$seeds/binary-plist/$tag-metadata', Z_PLIST) FROM Z_METADATA;" >/dev/null 2>&1 || true
  sqlite3 "$copy/s.db" "SELECT writefile('$seeds/model-cache/$tag-cache', Z_CONTENT) FROM Z_MODELCACHE;" >/dev/null 2>&1 || true
  if [ -s "$seeds/model-cache/$tag-cache" ]; then
    # Raw DEFLATE behind a gzip header inflates with gzip itself (it then misses the trailer).
    { printf '\037\213\010\000\000\000\000\000\000\003'; cat "$seeds/model-cache/$tag-cache"; } | gzip -dc 2>/dev/null \
      > "$seeds/keyed-archive/$tag-model" || true
    cp "$seeds/keyed-archive/$tag-model" "$seeds/binary-plist/$tag-model"
  fi
}

echo "building fuzz targets in $OUT (-sanitize=$SANITIZERS)"
for t in $TARGETS; do build_target "$t"; done
generate_seeds

failed=()
summary=()
for t in $TARGETS; do
  bin="$OUT/fuzz-$t"
  crashes="$OUT/crashes/$t"; corpus="$OUT/corpus/$t"
  mkdir -p "$crashes" "$corpus" "Fuzz/corpus/$t" "Fuzz/regressions/$t" "$OUT/seeds/$t"
  # The targets that write files (gzip-archive, backup-path) work in TMPDIR and cannot clean up when
  # libFuzzer exits: give each a folder of its own here, removed after its run.
  case $OUT in /*) export TMPDIR="$OUT/tmp/$t" ;; *) export TMPDIR="$ROOT/$OUT/tmp/$t" ;; esac
  rm -rf "$TMPDIR"; mkdir -p "$TMPDIR"
  # Every input that ever crashed must still pass.
  mapfile -t regressions < <(find "Fuzz/regressions/$t" -type f ! -name '.*' | sort)
  if [ ${#regressions[@]} -gt 0 ]; then
    if ! "$bin" -rss_limit_mb=2048 -timeout=20 "${regressions[@]}" >"$OUT/logs/run-$t-regressions.log" 2>&1; then
      echo "fuzz-$t: a regression input fails again (log: $OUT/logs/run-$t-regressions.log)" >&2
      failed+=("$t (regression)")
      rm -rf "$TMPDIR"
      continue
    fi
  fi
  echo "fuzz-$t: ${SECONDS_EACH}s (${#regressions[@]} regression inputs replayed)"
  log="$OUT/logs/run-$t.log"
  if "$bin" -max_total_time="$SECONDS_EACH" -max_len="$(max_len "$t")" -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$crashes/" -print_final_stats=1 \
       "$corpus" "Fuzz/corpus/$t" "$OUT/seeds/$t" >"$log" 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo "?")
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | grep -o '[0-9]*' || echo "?")
    summary+=("$(printf '%-14s ok      %10s runs  coverage %s' "$t" "$runs" "$cov")")
  else
    summary+=("$(printf '%-14s FAILED  see %s, input in %s' "$t" "$log" "$crashes")")
    failed+=("$t")
    grep -E 'ERROR|Fatal error|SUMMARY|Test unit written' "$log" | head -8 >&2 || true
  fi
  rm -rf "$TMPDIR"
done

echo
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz.sh: failures in: ${failed[*]}" >&2
  exit 1
fi
