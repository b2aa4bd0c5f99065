#!/usr/bin/env bash
# `make test`: runs `swift test` with a TMPDIR of its own (a fresh folder) and fails when anything
# of ours is left in it afterwards: storelens-* folders are scratch (private copies of the evidence
# that every library API and every command must remove on every path, docs/safety.md), sltest-*
# folders are the tests' own and must be removed by them too. The only things allowed to stay are
# SwiftPM's own: its empty *.lock files and TemporaryDirectory.* folders holding only .keep-directory.
# The tests' own folders (TemporaryFolder) go under a short root of the run's own instead,
# BASE/sl-XXXXXX named in STORELENS_TEST_ROOT, so that no test's paths depend on the length of the
# caller's TMPDIR (a deep test input must stay under SQLite's 512-byte path limit); that root must
# be left empty too, and is removed afterwards.
# Extra arguments go to `swift test` (e.g. scripts/test.sh --filter OutputPathTests).
#
# The commands the tests run are the release binary `make dist` packs (scripts/dist.sh --build-only:
# optimised, the Swift runtime linked in), the binary users get: the sources hold no `assert` that
# only a debug build would keep, and a run of ~12,000 short commands takes half the CPU (dynamic
# linking of the Swift runtime alone was a fifth of each start). STORELENS_TEST_EXECUTABLE names
# another; with --skip-build nothing is built and the tests run the debug build unless it is set.
# Both folders go on /dev/shm where it is a writable tmpfs (STORELENS_TEST_BASE names another
# base): the suite makes and deletes ~12,000 scratch folders, and ext4's inode allocator searching
# past recently deleted inodes cost a twentieth of the run's CPU.
set -uo pipefail
cd "$(dirname "$0")/.."
base=${STORELENS_TEST_BASE:-}
if [ -z "$base" ]; then
    base=/tmp
    if [ "$(uname -s)" = Linux ] && [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ]; then base=/dev/shm; fi
fi
run_tmp=$(mktemp -d "$base/sltest-run-XXXXXX") || exit 3
test_root=$(mktemp -d "$base/sl-XXXXXX") || { rm -rf "$run_tmp"; exit 3; }

# The genuine stores are evidence too: no test (and no command a test runs) may change a byte or a
# mode of them. Each test snapshots what it reads; this covers the whole run, whatever reads them.
real=../shared/fixtures/real
fingerprint() { (cd "$real" && find . -print0 | sort -z | xargs -0 stat -c '%n %s %a %Y' && find . -type f -print0 | sort -z | xargs -0 sha256sum); }
[ -d "$real" ] && fingerprint > "$run_tmp.real-before"

# The compiler keeps files of its own in TMPDIR (macro expansions it reports warnings in, under
# TemporaryDirectory.*), so the tests are built first with the caller's TMPDIR and the watched run
# only runs them: what is left afterwards is then ours, never the compiler's.
skip_build=0
for arg in "$@"; do [ "$arg" = "--skip-build" ] && skip_build=1; done
if [ "$skip_build" -eq 0 ]; then
    ${SWIFT:-swift} build --build-tests || { rm -rf "$run_tmp" "$run_tmp.real-before" "$test_root"; exit 1; }
    # The library example (LibraryExampleTests runs `swift test` in it) is a package of its own that
    # compiles every library target again: built here with the rest, so the test only runs it.
    ${SWIFT:-swift} build --build-tests --package-path Examples/MigrationTest --scratch-path .build/library-example \
        --disable-automatic-resolution || { rm -rf "$run_tmp" "$run_tmp.real-before" "$test_root"; exit 1; }
    # The command plugin's storelens in the same folder (PluginTests runs `swift package storelens`).
    ${SWIFT:-swift} package --package-path Examples/MigrationTest --scratch-path .build/library-example \
        --disable-automatic-resolution --disable-sandbox storelens --version >/dev/null || { rm -rf "$run_tmp" "$run_tmp.real-before" "$test_root"; exit 1; }
    if [ -z "${STORELENS_TEST_EXECUTABLE:-}" ]; then
        STORELENS_TEST_EXECUTABLE=$(SWIFT=${SWIFT:-swift} ./scripts/dist.sh --build-only) || { rm -rf "$run_tmp" "$run_tmp.real-before" "$test_root"; exit 1; }
        export STORELENS_TEST_EXECUTABLE
    fi
    set -- --skip-build "$@"
fi

# Every JSON output the tests get from storelens is kept here (CLI.run) and validated against its
# schema in schemas/ once the run is over (scripts/json-schemas.py, jsonschema in a venv of ours;
# skipped, saying why, where no venv can be made).
json_spool=$(mktemp -d "$base/sljson-XXXXXX") || { rm -rf "$run_tmp" "$test_root"; exit 3; }
# The run's output is kept too, so that the failed tests are named again at the very end, where
# a CI log's tail shows them.
test_log=$(mktemp "$base/sltest-log-XXXXXX") || { rm -rf "$run_tmp" "$test_root" "$json_spool"; exit 3; }
STORELENS_TEST_JSON_SPOOL="$json_spool" STORELENS_TEST_ROOT="$test_root" TMPDIR="$run_tmp" ${SWIFT:-swift} test "$@" 2>&1 | tee "$test_log"
status=${PIPESTATUS[0]}
venv=.build/sltest-venv-jsonschema
if [ ! -f "$venv/sltest-complete" ]; then
    rm -rf "$venv"
    { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet --disable-pip-version-check jsonschema && touch "$venv/sltest-complete"; } >/dev/null 2>&1
fi
if [ -f "$venv/sltest-complete" ]; then
    "$venv/bin/python" scripts/json-schemas.py spool "$json_spool" || { echo "make test: FAILED: JSON output that does not match its schema in schemas/ (above)" >&2; [ "$status" -eq 0 ] && status=1; }
else
    echo "make test: JSON outputs not validated against schemas/: no virtualenv with jsonschema could be made (python3 -m venv, then pip install from PyPI)" >&2
fi
rm -rf "$json_spool"

if [ -d "$real" ]; then
    if ! fingerprint | diff "$run_tmp.real-before" - > "$run_tmp.real-diff"; then
        echo "make test: FAILED: the run changed the genuine stores in $real (evidence must never be modified):" >&2
        sed 's/^/  /' "$run_tmp.real-diff" >&2
        [ "$status" -eq 0 ] && status=1
    fi
    rm -f "$run_tmp.real-before" "$run_tmp.real-diff"
fi

# SwiftPM's own leftovers, recognised by shape, not just by name.
is_swiftpm_own() {
    local entry=$1 name
    name=$(basename "$entry")
    if [[ -f "$entry" && "$name" == *.lock && ! -s "$entry" ]]; then return 0; fi
    # The compiler's macro expansions, when a test builds a package (the library example) anew.
    if [[ -d "$entry" && "$name" == swift-generated-sources ]]; then
        [ -z "$(find "$entry" -mindepth 1 ! -name '@__swiftmacro_*' -print -quit)" ] && return 0
    fi
    if [[ -d "$entry" && "$name" == TemporaryDirectory.* ]]; then
        [ -z "$(find "$entry" -mindepth 1 ! -name .keep-directory -print -quit)" ] && return 0
    fi
    return 1
}

# Every failed expectation, named again last (the suite and run totals left out).
failures=$(grep -a '^✘ Test ' "$test_log" | grep -av '^✘ Test run with' | cut -c1-600)
if [ -n "$failures" ]; then
    echo "make test: FAILED tests ($(printf '%s\n' "$failures" | wc -l) lines):" >&2
    printf '%s\n' "$failures" | sed 's/^/  /' >&2
fi
rm -f "$test_log"

left=()
while IFS= read -r -d '' entry; do
    is_swiftpm_own "$entry" || left+=("$entry")
done < <(find "$run_tmp" -mindepth 1 -maxdepth 1 -print0 | sort -z)
if [ "${#left[@]}" -gt 0 ]; then
    scratch=0
    for entry in "${left[@]}"; do [[ "$(basename "$entry")" == storelens-* ]] && scratch=$((scratch + 1)); done
    echo "make test: FAILED: ${#left[@]} item(s) left in the test run's TMPDIR ($run_tmp), $scratch of them storelens-* scratch folders:" >&2
    for entry in "${left[@]}"; do
        echo "  $entry" >&2
        [ -d "$entry" ] && (cd "$entry" && find . -mindepth 1 -maxdepth 3 | head -20 | sed 's/^/      /') >&2
    done
    [ "$status" -eq 0 ] && status=1
fi

# The tests' own root: everything in it is a test's TemporaryFolder (or what a test put beside
# one), which the test must remove.
left=()
while IFS= read -r -d '' entry; do left+=("$entry"); done < <(find "$test_root" -mindepth 1 -maxdepth 1 -print0 | sort -z)
if [ "${#left[@]}" -gt 0 ]; then
    echo "make test: FAILED: ${#left[@]} item(s) left in the tests' own root ($test_root):" >&2
    for entry in "${left[@]}"; do echo "  $entry" >&2; done
    [ "$status" -eq 0 ] && status=1
fi
chmod -R u+w "$test_root" 2>/dev/null
rm -rf "$run_tmp" "$test_root"
exit "$status"
