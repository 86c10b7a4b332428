#!/usr/bin/env bash
# The checking build CI runs after the main tests: clang with AddressSanitizer (leak checking on)
# and UndefinedBehaviorSanitizer (every report fatal), CPU only, into its own folder. It builds the
# library, the CPU test binaries and the fuzz targets (libFuzzer), runs the tests of core, data,
# operators, onnx (the importer on ONNX's test data) and models plus the fuzz corpus replays, then fuzzes each target of tests/fuzz for
# FUZZ_SECONDS from its seed corpus. A crash the fuzzer finds is saved under
# BUILD_DIR/fuzz_artifacts and fails the run: add it to tests/fuzz/corpus/<target>/ as a
# regression once fixed.
#
# Usage: tools/sanitize.sh        Environment: BUILD_DIR (build-asan), FUZZ_SECONDS (60 per
#        target; 0 skips fuzzing), SANITIZE_TESTS (ctest -L regex; default core|data|operators|
#        onnx|models|fuzz), JOBS (parallel build jobs, default all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD_DIR:-build-asan}
FUZZ_SECONDS=${FUZZ_SECONDS:-60}
JOBS=${JOBS:-$(nproc)}
START=$(date +%s)

bash tools/setup_deps.sh
missing=()
for p in clang libclang-rt-14-dev libomp-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO="sudo"
  echo "sanitize: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# -O1: sanitizer reports stay readable and the build stays affordable on two cores. Line tables
# are all the reports' stack traces need (full debug info makes the objects 1.6-1.8x larger).
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DHALFCAF_PYTHON=OFF -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only" -DHALFCAF_USE_CUDA=OFF \
  -DHALFCAF_SANITIZE=address,undefined -DHALFCAF_FUZZ=ON >/dev/null
cmake --build "$BUILD" -j "$JOBS" --target core_tests data_tests operators_tests onnx_tests models_tests \
  netdef_fuzz tensor_protos_fuzz dataset_fuzz image_decode_fuzz onnx_fuzz
echo "sanitize: built in $(($(date +%s) - START)) s"

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
ctest --test-dir "$BUILD" -L "${SANITIZE_TESTS:-core|data|operators|onnx|models|fuzz}" -j "$JOBS" \
  --output-on-failure
echo "sanitize: tests done at $(($(date +%s) - START)) s"

if ((FUZZ_SECONDS > 0)); then
  ART="$BUILD/fuzz_artifacts"
  mkdir -p "$ART"
  for target in netdef tensor_protos dataset image_decode onnx; do
    work="$BUILD/fuzz_corpus/$target"  # grows across runs in this folder; the seeds stay as they are
    mkdir -p "$work"
    seeds=(tests/fuzz/corpus/$target)
    [[ $target == netdef ]] && seeds+=(tests/fixtures models/lenet)
    echo "sanitize: fuzzing $target for ${FUZZ_SECONDS}s"
    if ! "$BUILD/bin/${target}_fuzz" -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 \
        -timeout=20 -max_len=65536 -print_final_stats=1 -artifact_prefix="$ART/${target}-" \
        "$work" "${seeds[@]}" >"$BUILD/fuzz_$target.log" 2>&1; then
      tail -n 60 "$BUILD/fuzz_$target.log"
      echo "sanitize: FAILED: the $target fuzz target found a problem; input saved in $ART" >&2
      exit 1
    fi
    grep -E '^stat::number_of_executed_units|^stat::peak_rss_mb' "$BUILD/fuzz_$target.log" |
      tr '\n' ' '
    echo
  done
fi
echo "sanitize: clean in $(($(date +%s) - START)) s"
