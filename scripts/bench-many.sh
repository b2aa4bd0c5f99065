#!/usr/bin/env bash
# Scan of many containers (called by scripts/bench.sh; runs alone too): SMALL and LARGE copies of
# the demo container (two stores each, as in a simulator's Containers/Data/Application folder),
# scanned RUNS times each. Prints a Markdown table with the median wall and CPU times and their
# ratio: with scan linear in the number of stores, LARGE/SMALL times cost about LARGE/SMALL (8).
#
#   BENCH_MANY_SMALL (250)  BENCH_MANY_LARGE (2000)  BENCH_RUNS (3)  BENCH_CORPUS (bench-corpus)
#   BENCH_BIN (.build/release/storelens)  BENCH_GEN (.build/release/storelens-fixtures)
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BENCH_BIN:-.build/release/storelens}
GEN=${BENCH_GEN:-.build/release/storelens-fixtures}
CORPUS=${BENCH_CORPUS:-bench-corpus}
RUNS=${BENCH_RUNS:-3}
SMALL=${BENCH_MANY_SMALL:-250}
LARGE=${BENCH_MANY_LARGE:-2000}
for tool in "$BIN" "$GEN"; do [ -x "$tool" ] || { echo "bench-many.sh: $tool is missing; run 'swift build -c release'" >&2; exit 1; }; done

mkdir -p "$CORPUS"
TEMPLATE="$CORPUS/many-template"
[ -d "$TEMPLATE/demo-container" ] || "$GEN" "$TEMPLATE" >/dev/null
corpus() { # N: a folder of N containers, built once
  local dir="$CORPUS/many-$1"
  if [ ! -f "$dir/.complete" ]; then
    rm -rf "$dir"; mkdir -p "$dir/Containers"
    for i in $(seq 1 "$1"); do cp -r "$TEMPLATE/demo-container" "$dir/Containers/$(printf 'APP-%05d' "$i")"; done
    touch "$dir/.complete"
  fi
  echo "$dir/Containers"
}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A WALL CPU
for n in "$SMALL" "$LARGE"; do
  dir=$(corpus "$n")
  "$BIN" scan "$dir" --quiet >/dev/null 2>&1 || true        # untimed: page cache
  walls=(); cpus=()
  for _ in $(seq "$RUNS"); do
    start=$(date +%s.%N)
    /usr/bin/time -f '%U %S' -o "$scratch/cpu" "$BIN" scan "$dir" --quiet >/dev/null 2>&1
    end=$(date +%s.%N)
    walls+=("$(echo "$end - $start" | bc -l)")
    cpus+=("$(tail -1 "$scratch/cpu" | awk '{print $1 + $2}')")
  done
  WALL[$n]=$(printf '%s\n' "${walls[@]}" | median)
  CPU[$n]=$(printf '%s\n' "${cpus[@]}" | median)
  printf '  scan of %5d containers %8.3f s wall %8.3f s CPU\n' "$n" "${WALL[$n]}" "${CPU[$n]}" >&2
done
stores=$(( 2 * LARGE ))
echo "| scan of many containers | $SMALL containers | $LARGE containers ($stores stores) | ratio | target |"
echo "|---|---|---|---|---|"
printf '| wall time, median of %s | %.3f s | %.3f s | %.2f× | near %.0f× (linear) |\n' "$RUNS" "${WALL[$SMALL]}" "${WALL[$LARGE]}" "$(echo "${WALL[$LARGE]} / ${WALL[$SMALL]}" | bc -l)" "$(echo "$LARGE / $SMALL" | bc -l)"
printf '| CPU time (user + system), median of %s | %.3f s | %.3f s | %.2f× | near %.0f× (linear) |\n' "$RUNS" "${CPU[$SMALL]}" "${CPU[$LARGE]}" "$(echo "${CPU[$LARGE]} / ${CPU[$SMALL]}" | bc -l)" "$(echo "$LARGE / $SMALL" | bc -l)"
