#!/usr/bin/env bash
# gpu_check.sh: the CUDA build's whole check on a GPU machine without network, in one command
# there (docs/cuda.md, "Checking on a GPU machine").
#
#   gpu_check.sh pack <dir>
#       Here, on Debian 12: unpacks the Debian packages a GPU machine lacks (headers, shared
#       libraries, protoc and gRPC's plugin, Fashion-MNIST) with apt-get download and dpkg -x,
#       drops what the build does not read (static libraries, docs) and packs the rest into
#       <dir>/deps.tar.xz; fails when <dir> is over 60 MiB, so that it travels with the source
#       tree in 64.
#   gpu_check.sh run <dir> <out> [seconds]
#       On the GPU machine (python3 with a CUDA PyTorch, CMake, Ninja, the CUDA toolkit and
#       NCCL): unpacks <dir>'s packages into /tmp/est-gpu-deps, configures against that
#       LibTorch and those packages with EST_WITH_CUDA=ON and
#       EST_WITH_NCCL=ON, builds, runs every [cuda] test case, the NCCL tests and
#       `make bench`'s gpu group, and writes each log and summary.txt into <out>. Every part
#       has a share of [seconds] (default 540), so the command ends within it.
set -euo pipefail

readonly PACKAGES=(
  # protobuf and gRPC, with protoc and the plugin that generate our services
  libprotobuf-dev libprotobuf32 libprotobuf-lite32 protobuf-compiler libprotoc32
  libgrpc++-dev libgrpc-dev libgrpc++1.51 libgrpc29 protobuf-compiler-grpc
  libabsl-dev libabsl20220623 libc-ares-dev libc-ares2 libre2-dev libre2-9 libssl-dev
  # logging, flags, JSON, CSV, tests, Gloo's headers (LibTorch carries Gloo's code)
  libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 libcli11-dev nlohmann-json3-dev catch2
  libcsv-dev libcsv3 libgloo-dev libgloo0 zlib1g-dev
  # the HTTP server of est-serve's REST APIs, and the GnuTLS under it
  libmicrohttpd-dev libmicrohttpd12 libgnutls28-dev libgnutls30
  # the gpu bench group's images
  dataset-fashion-mnist
)
readonly LIMIT_MIB=60

pack() {
  local dir=$1 work
  work=$(mktemp -d)
  chmod 755 "$work"  # apt-get download runs as _apt
  mkdir -p "$work/debs" "$work/root" "$dir"
  (cd "$work/debs" && apt-get download -q -o APT::Sandbox::User=root "${PACKAGES[@]}" >/dev/null)
  for deb in "$work"/debs/*.deb; do dpkg -x "$deb" "$work/root"; done
  rm -rf "$work/root/usr/share/doc" "$work/root/usr/share/man" "$work/root/usr/share/lintian"
  find "$work/root" -name '*.a' ! -name 'libCatch2WithMain.a' -delete  # Catch2's config names it
  tar -cJf "$dir/deps.tar.xz" -C "$work/root" .
  rm -rf "$work"
  local mib
  mib=$(du -sm "$dir" | cut -f1)
  echo "gpu_check: $dir holds ${#PACKAGES[@]} packages, compressed, in $mib MiB"
  if [ "$mib" -gt "$LIMIT_MIB" ]; then
    echo "gpu_check: $dir is over $LIMIT_MIB MiB; it must travel with the source tree in 64" >&2
    exit 1
  fi
}

# Runs "$@" with a time limit of $1 seconds, its output into $out/$2.log; records the outcome.
step() {
  local seconds=$1 name=$2
  shift 2
  local start=$SECONDS status=0 outcome=passed
  timeout --kill-after=10 "$seconds" "$@" >"$out/$name.log" 2>&1 || status=$?
  if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    outcome="timed out after $seconds s"
  elif [ "$status" -ne 0 ]; then
    outcome="failed (exit $status)"
  fi
  echo "$name: $outcome in $((SECONDS - start)) s" | tee -a "$out/summary.txt"
}

# Every [cuda] test case of every test program in <build>/bin, one program after another.
cuda_cases() {
  local failed=0
  for program in "$1"/bin/*_tests; do
    if "$program" --list-test-names-only "[cuda]" | grep -q .; then
      echo "== $program [cuda]"
      "$program" "[cuda]" || failed=1
    fi
  done
  return $failed
}

run() {
  local dir out budget
  dir=$(cd "$1" && pwd)
  out=$2
  budget=${3:-540}
  mkdir -p "$out"
  : >"$out/summary.txt"
  local deps=/tmp/est-gpu-deps
  rm -rf "$deps" && mkdir -p "$deps" && tar -xJf "$dir/deps.tar.xz" -C "$deps"
  export PATH="$deps/usr/bin:$PATH"
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The programs read the images where Debian installs them.
  if [ ! -e /usr/share/datasets/fashion-mnist ]; then
    mkdir -p /usr/share/datasets
    ln -s "$deps/usr/share/datasets/fashion-mnist" /usr/share/datasets/fashion-mnist
  fi
  # Debian's Gloo config names its library by an absolute path: make it the unpacked one.
  sed -i "s|\"/usr/lib/libgloo|\"$deps/usr/lib/libgloo|" "$deps"/usr/share/cmake/Gloo/GlooTargets-*.cmake
  local torch_prefix
  torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  {
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
    python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  } | tee -a "$out/summary.txt"
  local libtorch  # torch/share/cmake -> torch/lib
  libtorch=$(dirname "$(dirname "$torch_prefix")")/lib
  step $((budget * 5 / 100)) configure cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$torch_prefix;$deps/usr" -DEST_WITH_CUDA=ON -DEST_WITH_NCCL=ON \
    -DTORCH_LIBRARY="$libtorch/libtorch.so" -Dc10_LIBRARY="$libtorch/libc10.so" \
    -DEST_TENSORBOARD_PYTHON="$(command -v python3)"
  step $((budget * 50 / 100)) build cmake --build build-gpu -j "$(nproc)"
  step $((budget * 15 / 100)) cuda_tests bash "$0" cuda-cases build-gpu
  step $((budget * 15 / 100)) nccl_tests ctest --test-dir build-gpu -L nccl --output-on-failure -j 4
  step $((budget * 13 / 100)) gpu_bench python3 apps/bench/run_benchmarks.py --build build-gpu --only gpu \
    --repetitions 1
  cat "$out/summary.txt"
  ! grep -q "failed\|timed out" "$out/summary.txt"
}

case "${1:-}" in
  pack) [ $# -eq 2 ] || { echo "usage: gpu_check.sh pack <dir>" >&2; exit 2; }; pack "$2" ;;
  run) [ $# -ge 3 ] && [ $# -le 4 ] || { echo "usage: gpu_check.sh run <dir> <out> [seconds]" >&2; exit 2; }
       run "$2" "$3" "${4:-540}" ;;
  cuda-cases) cuda_cases "$2" ;;
  *) echo "usage: gpu_check.sh pack <dir> | run <dir> <out> [seconds]" >&2; exit 2 ;;
esac
