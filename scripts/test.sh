#!/usr/bin/env bash
# `make test`: runs `swift test` with a TMPDIR of its own (a fresh folder) and fails when any
# storelens-* folder is left in it afterwards. Those are scratch folders: private copies of the
# evidence that every library API and every command must remove on every path (docs/safety.md).
# Folders the tests make themselves are named sltest-* and do not count.
# Extra arguments go to `swift test` (e.g. scripts/test.sh --filter OutputPathTests).
set -uo pipefail
cd "$(dirname "$0")/.."
run_tmp=$(mktemp -d "${TMPDIR:-/tmp}/sltest-run-XXXXXX") || exit 3
TMPDIR="$run_tmp" ${SWIFT:-swift} test "$@"
status=$?
left=$(find "$run_tmp" -mindepth 1 -maxdepth 1 -name 'storelens-*' | sort)
if [ -n "$left" ]; then
    count=$(printf '%s\n' "$left" | wc -l)
    echo "make test: FAILED: $count storelens-* scratch folder(s) left in the test run's TMPDIR ($run_tmp):" >&2
    while IFS= read -r folder; do
        echo "  $folder:" >&2
        (cd "$folder" && find . -mindepth 1 -maxdepth 3 | head -20 | sed 's/^/      /') >&2
    done <<< "$left"
    [ "$status" -eq 0 ] && status=1
fi
rm -rf "$run_tmp"
exit "$status"
