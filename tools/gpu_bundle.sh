#!/usr/bin/env bash
# Packs a CUDA build of halfcaf for a GPU machine that lacks protobuf/glog/gflags/oneDNN: the
# binaries, libhalfcaf.so and every non-system, non-CUDA shared library they need, the models,
# test data and tools/gpu_run.sh, in one compressed archive (default gpu_bundle.tar.xz; keep it
# under the 64 MiB a device run may carry). cuDNN/cuBLAS/cudart come from the GPU machine.
#
# Usage: tools/gpu_bundle.sh [ARCHIVE]   Environment: HALFCAF_CUDA_ARCHS (default 90-real: H200)
#        WITH_DATA=1 also packs Fashion-MNIST (30 MB) for the LeNet check.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${1:-gpu_bundle.tar.xz}")
ARCHS=${HALFCAF_CUDA_ARCHS:-90-real}
bash tools/setup_deps.sh
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DHALFCAF_USE_CUDA=ON \
  -DHALFCAF_CUDA_ARCHS="$ARCHS" >/dev/null
cmake --build build-gpu -j "$(nproc)"

STAGE=$(mktemp -d)/halfcaf_gpu
mkdir -p "$STAGE/bin" "$STAGE/lib" "$STAGE/models" "$STAGE/tests" "$STAGE/tools"
cp build-gpu/bin/* "$STAGE/bin/"
cp build-gpu/lib/libhalfcaf.so "$STAGE/lib/"
# Shared libraries the binaries load, minus the C runtime and the CUDA libraries.
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libpthread|libdl\.so|librt\.so|libcuda|libcudart|libcublas|libcudnn|libnvrtc|libnvJitLink|libhalfcaf)'
for f in "$STAGE"/bin/* "$STAGE/lib/libhalfcaf.so"; do
  ldd "$f" | awk '$3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  [[ "$name" =~ $skip ]] || cp -L "$path" "$STAGE/lib/"
done
cp -r models/lenet "$STAGE/models/"
cp -r tests/fixtures "$STAGE/tests/"
cp tools/gpu_run.sh "$STAGE/tools/"
cp -r tools/peers "$STAGE/tools/"
if [[ "${WITH_DATA:-0}" == "1" && -d /usr/share/datasets/fashion-mnist ]]; then
  cp -r /usr/share/datasets/fashion-mnist "$STAGE/fashion-mnist"
fi
tar -C "$(dirname "$STAGE")" -cJf "$OUT" halfcaf_gpu
rm -rf "$(dirname "$STAGE")"
size=$(stat -c %s "$OUT")
if ((size > 60 * 1024 * 1024)); then
  echo "gpu_bundle: WARNING: $OUT is $((size >> 20)) MiB; a device run carries at most 64 MiB" \
       "together with the working tree (drop WITH_DATA=1, or strip the binaries)" >&2
fi
echo "gpu_bundle: $OUT ($(du -h "$OUT" | cut -f1)); on the GPU machine:"
echo "  tar -xJf $(basename "$OUT") && bash halfcaf_gpu/tools/gpu_run.sh \$OUT"
