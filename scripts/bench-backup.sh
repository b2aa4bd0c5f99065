#!/usr/bin/env bash
# The encrypted-backup part of `make bench` (called by scripts/bench.sh, or on its own after
# `swift build -c release`). Builds a backup holding one BENCH_BACKUP_MB MB store (default 500),
# encrypts it with the tests' independent writer (scripts/encrypt-backup.py, in the virtualenv the
# tests make under .build/), then measures on the same encrypted bytes in the same run:
#   - storelens' decryption of the store (AES-256-CBC through libcrypto, plaintext and ciphertext
#     hashed on the way, written to the scratch folder), in-process, as `STORELENS_TIMINGS=1` reports;
#   - `openssl enc -d -aes-256-cbc` of the same file with the same key, written to /dev/null;
#   - the whole `storelens scan` of the backup (keybag, Manifest.db, decryption, hash after).
# Prints a markdown section on stdout. Figures are never asserted in tests.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-.build/release/storelens}
RUNS=${BENCH_RUNS:-3}
MB=${BENCH_BACKUP_MB:-500}
CORPUS=${BENCH_CORPUS:-bench-corpus}
VENV=.build/encrypted-backup-venv
WORK="$CORPUS/backup-${MB}mb"
[ -x "$BIN" ] || { echo "bench-backup.sh: $BIN is missing; run 'swift build -c release' first" >&2; exit 1; }
command -v openssl >/dev/null || { echo "bench-backup.sh: openssl is missing (make deps installs it)" >&2; exit 1; }
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import cryptography' 2>/dev/null; then
  python3 -m venv "$VENV" && "$VENV/bin/pip" install --quiet --disable-pip-version-check cryptography iphone_backup_decrypt \
    || { echo "bench-backup.sh: cannot make $VENV (PyPI unreachable?)" >&2; exit 1; }
fi
REL="Library/Application Support/big.sqlite"
DOMAIN="AppDomain-com.example.bench"
ID=$(printf '%s' "$DOMAIN-$REL" | sha1sum | cut -c1-40)
if [ ! -f "$WORK/.complete" ]; then
  echo "generating a ${MB} MB store in an encrypted backup…" >&2
  rm -rf "$WORK"; mkdir -p "$WORK/plain/${ID:0:2}"
  sqlite3 "$WORK/plain/${ID:0:2}/$ID" "PRAGMA page_size = 4096; CREATE TABLE t (b BLOB);
    WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < $MB) INSERT INTO t SELECT randomblob(1048000) FROM c;"
  sqlite3 "$WORK/plain/Manifest.db" "CREATE TABLE Files (fileID TEXT PRIMARY KEY, domain TEXT, relativePath TEXT, flags INTEGER, file BLOB);
    INSERT INTO Files VALUES ('$ID', '$DOMAIN', '$REL', 1, NULL);"
  printf 'bench password\n' > "$WORK/password"
  # iOS's own iteration counts: unlocking is part of what the whole command pays.
  "$VENV/bin/python" scripts/encrypt-backup.py "$WORK/plain" "$WORK/encrypted" "$WORK/password" --dump-file-key "$REL" "$WORK/key"
  touch "$WORK/.complete"
fi
ENC="$WORK/encrypted/${ID:0:2}/$ID"
bytes=$(stat -c %s "$ENC")
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
sync
ours=(); theirs=(); whole=()
for _ in $(seq "$RUNS"); do
  start=$(date +%s.%N)
  line=$(STORELENS_TIMINGS=1 "$BIN" scan "$WORK/encrypted" --password-file "$WORK/password" 2>&1 >/dev/null | grep '^timing backup-decrypt' || true)
  whole+=("$(echo "$(date +%s.%N) - $start" | bc -l)")
  ours+=("$(echo "$line" | sed -n 's/.*backup-decrypt-seconds=\([0-9.e-]*\).*/\1/p')")
  start=$(date +%s.%N)
  openssl enc -d -aes-256-cbc -K "$(cat "$WORK/key")" -iv 00000000000000000000000000000000 -in "$ENC" -out /dev/null
  theirs+=("$(echo "$(date +%s.%N) - $start" | bc -l)")
done
o=$(printf '%s\n' "${ours[@]}" | median); t=$(printf '%s\n' "${theirs[@]}" | median); w=$(printf '%s\n' "${whole[@]}" | median)
mbps() { echo "$bytes / $1 / 1000000" | bc -l; }
verdict() { if [ "$(echo "$1" | bc -l)" = 1 ]; then echo met; else echo MISSED; fi; }
echo "## Encrypted backups"
echo
echo "One $(( bytes / 1048576 )) MB store in an encrypted backup (iOS 10.2+ format, written by \`scripts/encrypt-backup.py\`, iOS's iteration counts). Medians of $RUNS runs."
echo
echo "| what | time | throughput | target |"
echo "|---|---|---|---|"
printf '| storelens decrypting the store in-process (AES-256-CBC via libcrypto, SHA-256 of ciphertext and plaintext, written to scratch) | %.3f s | %.0f MB/s | ≥ 500 MB/s (%s) |\n' "$o" "$(mbps "$o")" "$(verdict "$(mbps "$o") >= 500")"
printf '| `openssl enc -d -aes-256-cbc` of the same bytes to /dev/null | %.3f s | %.0f MB/s | reference |\n' "$t" "$(mbps "$t")"
printf '| `storelens scan` of the backup, whole command (PBKDF2 unlock, Manifest.db, decryption, hash after) | %.3f s | – | none set |\n' "$w"
