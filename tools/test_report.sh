#!/usr/bin/env bash
# After a CTest run in BUILD (default build): the peer comparisons that ran and those whose peer
# was missing (from the log tests/util/peer.h writes to HALFCAF_PEER_LOG, by default
# BUILD/peer_log.txt), and the 10 slowest tests (CTest's own timings). Under HALFCAF_PEER=1 it
# fails when a peer was missing or no comparison ran at all.
set -euo pipefail
build=${1:-build}
log=${HALFCAF_PEER_LOG:-$build/peer_log.txt}
ran=0 missing=0
if [[ -s $log ]]; then
  ran=$(grep -c ' ran ' "$log" || true)
  missing=$(grep -c ' missing ' "$log" || true)
  echo "peer comparisons: $ran ran, $missing skipped (peer missing)"
  awk '{n[$1" "$2]++} END {for (k in n) print "  " k ": " n[k]}' "$log" | sort
  grep ' missing ' "$log" | sed 's/^/  missing: /' | head -n 20 || true
else
  echo "peer comparisons: none ran (no $log)"
fi
costs=$build/Testing/Temporary/CTestCostData.txt
if [[ -f $costs ]]; then
  echo "slowest tests (seconds, CTest's timing data):"
  # Lines "name runs seconds" until the "---" that starts the list of failed tests; only tests
  # that still exist (the data keeps removed ones).
  ctest --test-dir "$build" -N | sed -n 's/^ *Test *#[0-9]*: //p' >"$build/test_names.txt"
  # Sorted into a file first: with pipefail, "sort | head" fails with SIGPIPE (exit 141) once
  # sort's output outgrows the pipe and head has stopped reading.
  awk 'NR == FNR {known[$1] = 1; next} /^---/ {exit} NF == 3 && ($1 in known) {
         printf "  %8.1f  %s\n", $3, $1 }' "$build/test_names.txt" "$costs" |
    sort -rn >"$build/test_times.txt"
  head -n 10 "$build/test_times.txt"
fi
if [[ "${HALFCAF_PEER:-0}" == "1" ]] && ((ran == 0 || missing > 0)); then
  echo "test_report: HALFCAF_PEER=1 requires every peer comparison to run" >&2
  exit 1
fi
