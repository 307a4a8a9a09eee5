#!/usr/bin/env bash
# Installs the Debian packages TorchEstimator needs, and nothing that is already there.
# Idempotent and quiet when nothing is missing; runs `apt-get update` only when it must.
set -euo pipefail

# install_deps.sh [demo|all|bench]: `demo` installs what `make demo` builds and runs; `all` (the
# default) adds what `make test` needs besides; `bench` adds Java for make bench's TorchServe.
#
# libopenblas0-openmp is the BLAS libtorch recommends: without it Debian's reference BLAS
# makes dense layers about 10x slower. libdnnl-dev: the headers of the oneDNN libtorch links,
# whose matrix products the kernels run on AVX-512 CPUs (kernels/onednn_matmul.h). catch2 is
# header-only, and configuring needs it. libmicrohttpd-dev: the HTTP server of est-serve's REST APIs.
# libfarmhash-dev: TensorFlow's string fingerprint, which feature columns hash with.
# libleveldb-dev: the table format of TensorFlow's checkpoint index, written and read by checkpoint/;
# its CMake package links snappy, which the package does not pull in: libsnappy-dev.
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libtorch-dev libgloo-dev libprotobuf-dev protobuf-compiler libgrpc++-dev protobuf-compiler-grpc
  libopenblas0-openmp libdnnl-dev
  libspdlog-dev libcli11-dev nlohmann-json3-dev catch2 zlib1g-dev libcsv-dev libmicrohttpd-dev
  libfarmhash-dev libleveldb-dev libsnappy-dev
  dataset-fashion-mnist
)
# For `make test`: clang and libclang-rt-14-dev (its sanitizer and libFuzzer runtimes) build
# the sanitizer tree of `make sanitize` and `make fuzz`; python3-torch is PyTorch DDP, the peer
# of the tests and benchmarks; openssl makes the test certificate authority of the store's TLS
# tests; fortunes is the text est-train's transformer_lm learns; openmpi-bin's mpirun starts
# est-train in the MPI tests; python3-yaml reads the Kubernetes manifests in their test;
# slurmctld, slurmd, slurm-client and munge make the private Slurm of the Slurm tests
# (tests/slurm/local_slurm.sh starts its own daemons; the system's stay unconfigured).
set_name="${1:-all}"
case "$set_name" in
  demo) ;;
  all | bench)
    packages+=(clang libclang-rt-14-dev python3 python3-venv python3-torch python3-yaml openssl fortunes openmpi-bin
               slurmctld slurmd slurm-client munge)
    # make bench's TorchServe peer: its frontend runs on Java.
    if [ "$set_name" = bench ]; then packages+=(openjdk-17-jre-headless); fi ;;
  *) echo "install_deps: unknown package set '$set_name'; expected demo, all or bench" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "install_deps: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
if ! $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >/tmp/est-apt.log 2>&1; then
  $sudo apt-get update -q >>/tmp/est-apt.log 2>&1
  $sudo apt-get install -y -q --no-install-recommends "${missing[@]}" >>/tmp/est-apt.log 2>&1 \
    || { echo "install_deps: apt-get failed, see /tmp/est-apt.log" >&2; tail -20 /tmp/est-apt.log >&2; exit 1; }
fi
