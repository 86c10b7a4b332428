#!/usr/bin/env bash
# halfcaf against PyTorch on a machine shared with other work: for each of --rounds rounds, starts
# --load CPU-bound competing processes (busy shell loops), runs `benchmark ... --compare pytorch`
# (halfcaf, then the PyTorch peer, both under the same load), stops the load, and finally prints,
# per precision and batch size, the median ratio halfcaf / PyTorch over the rounds with its
# spread, and each side's images/s. --load 0 measures the quiet machine the same way.
#
#   bash tools/bench_contention.sh --load 4 --rounds 3 --model resnet50 --batch_size 8 \
#        --precision fp32 --iters 5 --warmup 2 [--out DIR] [-- more benchmark flags]
#
# The rounds alternate halfcaf and the peer (h, p, h, p, ...), so slow drift of the machine
# touches both; the JSON of every round stays in --out (default: a temporary folder).
set -euo pipefail
cd "$(dirname "$0")/.."
LOAD=4 ROUNDS=3 MODEL=resnet50 BATCH=8 PRECISION=fp32 ITERS=5 WARMUP=2 OUT=""
EXTRA=()
while (($#)); do
  case $1 in
    --load) LOAD=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --model) MODEL=$2; shift 2 ;;
    --batch_size) BATCH=$2; shift 2 ;;
    --precision) PRECISION=$2; shift 2 ;;
    --iters) ITERS=$2; shift 2 ;;
    --warmup) WARMUP=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --) shift; EXTRA=("$@"); break ;;
    *) echo "bench_contention: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ $LOAD =~ ^[0-9]+$ && $ROUNDS =~ ^[1-9][0-9]*$ ]] ||
  { echo "bench_contention: --load must be >= 0 and --rounds >= 1" >&2; exit 2; }
BIN=${HALFCAF_BIN:-build/bin}
[[ -x $BIN/benchmark ]] || { echo "bench_contention: no $BIN/benchmark (run tools/build.sh)" >&2; exit 1; }
[[ -n $OUT ]] || OUT=$(mktemp -d)
mkdir -p "$OUT"

pids=()
stop_load() {
  if ((${#pids[@]})); then
    kill "${pids[@]}" 2>/dev/null || true
    wait "${pids[@]}" 2>/dev/null || true  # killed: their status is 143
  fi
  pids=()
}
trap stop_load EXIT INT TERM

echo "bench_contention: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(nproc) cores;" \
  "$LOAD competing processes, $ROUNDS rounds, $MODEL batch $BATCH $PRECISION, $ITERS iterations" \
  "after $WARMUP warm-up"
for ((r = 1; r <= ROUNDS; r++)); do
  for ((k = 0; k < LOAD; k++)); do
    bash -c 'while :; do :; done' &
    pids+=($!)
  done
  "$BIN/benchmark" --model "$MODEL" --batch_size "$BATCH" --precision "$PRECISION" \
    --iters "$ITERS" --warmup "$WARMUP" --compare pytorch --json "$OUT/round$r.json" \
    "${EXTRA[@]}" > "$OUT/round$r.txt" 2> "$OUT/round$r.err" ||
    { stop_load; cat "$OUT/round$r.err" >&2; echo "bench_contention: round $r failed" >&2; exit 1; }
  stop_load
  echo "bench_contention: round $r done"
done

/usr/bin/python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for r in range(1, rounds + 1):
    for res in json.load(open(f"{out}/round{r}.json"))["results"]:
        key = (res["precision"], res["batch_size"])
        h, p = res.get("images_per_sec"), res.get("pytorch_images_per_sec")
        if h and p:
            rows.setdefault(key, []).append((h, p, h / p))
print(f"{'precision':10s}{'batch':>6s}{'halfcaf img/s':>16s}{'PyTorch img/s':>16s}"
      f"{'ratio median':>14s}{'[min .. max]':>18s}")
for (prec, batch), v in sorted(rows.items()):
    ratios = [x[2] for x in v]
    print(f"{prec:10s}{batch:6d}{statistics.median(x[0] for x in v):16.3f}"
          f"{statistics.median(x[1] for x in v):16.3f}{statistics.median(ratios):14.3f}"
          f"{'[%.3f .. %.3f]' % (min(ratios), max(ratios)):>18s}")
if not rows:
    sys.exit("bench_contention: no round produced both frameworks' numbers")
PY
echo "bench_contention: per-round output in $OUT"
