#!/usr/bin/env bash
# Packs a CUDA build of halfcaf for a GPU machine that lacks protobuf/glog/gflags/oneDNN: the
# binaries, libhalfcaf.so and every non-system, non-CUDA shared library they need, the models,
# test data and tools/gpu_run.sh, in one compressed archive (default gpu_bundle.tar.xz; keep it
# under the 64 MiB a device run may carry). cuDNN/cuBLAS/cudart come from the GPU machine.
#
# Also packed: the test fixtures (tests/fixtures, found by the tests beside bin/, so the GPU tests
# do not depend on this machine's source path), tools/gpu_suites.py (the per-suite test runner),
# the PyTorch peers, and Fashion-MNIST for the LeNet check: the whole test set and the first
# TRAIN_IMAGES (20000) training images, so its accuracy means something (WITH_DATA=full: all 60000
# images, 30 MB; WITH_DATA=0: none, LeNet then trains on synthetic data).
#
# Usage: tools/gpu_bundle.sh [ARCHIVE]   Environment: HALFCAF_CUDA_ARCHS (default 90-real: H200),
#        BUILD_DIR (default build-gpu; an existing CUDA build folder, e.g. build, is reused).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${1:-gpu_bundle.tar.xz}")
ARCHS=${HALFCAF_CUDA_ARCHS:-90-real}
BUILD=${BUILD_DIR:-build-gpu}
bash tools/setup_deps.sh
if [[ "$BUILD" == "build-gpu" ]]; then
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DHALFCAF_USE_CUDA=ON \
    -DHALFCAF_CUDA_ARCHS="$ARCHS" >/dev/null
fi
cmake --build "$BUILD" -j "$(nproc)"
[[ -x "$BUILD/bin/gpu_preflight" ]] || { echo "gpu_bundle: $BUILD is not a CUDA build" >&2; exit 1; }

STAGE=$(mktemp -d)/halfcaf_gpu
mkdir -p "$STAGE/bin" "$STAGE/lib" "$STAGE/models" "$STAGE/tests" "$STAGE/tools"
for f in "$BUILD"/bin/*; do
  case "$(basename "$f")" in
    core_tests|data_tests|operators_tests|models_tests|tools_tests|suite_runner_fixture) ;;  # CPU-only
    *) cp "$f" "$STAGE/bin/" ;;
  esac
done
cp "$BUILD/lib/libhalfcaf.so" "$STAGE/lib/"
# Shared libraries the binaries load, minus the C runtime and the CUDA libraries.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libcuda|libcudart|libcublas|libcudnn|libnvrtc|libnvJitLink|libhalfcaf)'
for f in "$STAGE"/bin/* "$STAGE/lib/libhalfcaf.so"; do
  ldd "$f" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "$name" =~ $skip ]] || cp -L "$path" "$STAGE/lib/"
done
cp -r models/lenet "$STAGE/models/"
cp -r tests/fixtures "$STAGE/tests/"
cp tools/gpu_run.sh tools/gpu_suites.py "$STAGE/tools/"
cp -r tools/peers "$STAGE/tools/"
FMNIST=/usr/share/datasets/fashion-mnist
case "${WITH_DATA:-subset}" in
  full) cp -r "$FMNIST" "$STAGE/fashion-mnist" ;;
  0) ;;
  *)
    mkdir -p "$STAGE/fashion-mnist"
    cp "$FMNIST"/t10k-*-ubyte.gz "$STAGE/fashion-mnist/"
    python3 - "$FMNIST" "$STAGE/fashion-mnist" "${TRAIN_IMAGES:-20000}" <<'PY'
import gzip, struct, sys
src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
for name, header, item in (("train-images-idx3-ubyte.gz", 16, 28 * 28),
                           ("train-labels-idx1-ubyte.gz", 8, 1)):
    raw = gzip.open("%s/%s" % (src, name)).read()
    head = bytearray(raw[:header])
    struct.pack_into(">I", head, 4, n)  # the item count
    with gzip.open("%s/%s" % (dst, name), "wb") as f:
        f.write(bytes(head) + raw[header:header + n * item])
PY
    ;;
esac
tar -C "$(dirname "$STAGE")" -cJf "$OUT" halfcaf_gpu
rm -rf "$(dirname "$STAGE")"
size=$(stat -c %s "$OUT")
if ((size > 60 * 1024 * 1024)); then
  echo "gpu_bundle: WARNING: $OUT is $((size >> 20)) MiB; a device run carries at most 64 MiB" \
       "together with the working tree (drop WITH_DATA=1, or strip the binaries)" >&2
fi
echo "gpu_bundle: $OUT ($(du -h "$OUT" | cut -f1)); on the GPU machine:"
echo "  tar -xJf $(basename "$OUT") && bash halfcaf_gpu/tools/gpu_run.sh \$OUT"
