#!/usr/bin/env bash
# One instruction-set leg of the tests: the layers whose code runs on oneDNN (operators, models,
# onnx) run again with oneDNN capped at ISA, as on a CPU that has nothing above it. CI runs the
# legs AVX512_CORE_BF16 (BF16 instructions, no AMX: AMD Zen 4, Intel Cooper Lake), AVX512_CORE
# (AVX-512 without BF16: Skylake / Cascade Lake) and AVX2 (no AVX-512: older and smaller CPUs)
# after the full, uncapped run.
#
#   bash tools/test_isa.sh AVX2 [build-dir]      # after tools/test.sh (or tools/build.sh)
#
# ISA is oneDNN's name: AVX2, AVX512_CORE, AVX512_CORE_BF16, AVX512_CORE_AMX, ... The cap is set
# in both of oneDNN's variables (ONEDNN_MAX_CPU_ISA, DNNL_MAX_CPU_ISA: older releases read only
# the second) and named to the tests (HALFCAF_EXPECT_DNNL_ISA), whose DnnlIsaTest checks it took
# effect. The log shows the ISA oneDNN reports and the kernel it picks for a convolution.
set -euo pipefail
cd "$(dirname "$0")/.."
isa=${1:?usage: tools/test_isa.sh ISA [build-dir]}
build=${2:-build}
export ONEDNN_MAX_CPU_ISA=$isa DNNL_MAX_CPU_ISA=$isa HALFCAF_EXPECT_DNNL_ISA=$isa
bin=$build/bin/operators_tests
[[ -x $bin ]] || { echo "test_isa: no $bin (run tools/build.sh first)" >&2; exit 1; }
echo "test_isa: CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "test_isa: oneDNN capped at $isa"
# oneDNN's own words: the ISA it dispatches to and the convolution kernel it created.
ONEDNN_VERBOSE=1 DNNL_VERBOSE=1 "$bin" --gtest_filter='DnnlIsaTest.CapTakesEffect' 2>&1 |
  grep -E 'isa:|exec,cpu,convolution|kernel' | sed 's/^/test_isa: /' | awk 'NR <= 4'
ctest --test-dir "$build" -L '^(operators|models|onnx)$' --output-on-failure -j "$(nproc)"
