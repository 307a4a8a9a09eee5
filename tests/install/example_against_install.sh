#!/usr/bin/env bash
# Installs a build of TorchEstimator into a temporary prefix, then configures, builds and
# runs the standalone quick start project (examples/quickstart/) against that prefix only,
# so a header or target the install lacks fails here as it would for a user.
# Usage: example_against_install.sh <build dir>   (run from the repository root)
set -euo pipefail

build=${1:?usage: example_against_install.sh <build dir>}
work=$(mktemp -d "${TMPDIR:-/tmp}/est-installed-example.XXXXXX")
trap 'rm -rf "$work"' EXIT

cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
prefix_path="$work/prefix"
for dependency in Torch_DIR Gloo_DIR; do
  dir=$(cached "$dependency")
  if [[ -n "$dir" && "$dir" != *-NOTFOUND ]]; then prefix_path+=";$dir"; fi
done

cmake --install "$build" --prefix "$work/prefix" >/dev/null
if find "$work/prefix/include" -name '*_impl.h' -o -name 'tcp_socket.h' -o -name '*.pb.h' | grep -q .; then
  echo "error: the install holds internal headers:" >&2
  find "$work/prefix/include" -name '*_impl.h' -o -name 'tcp_socket.h' -o -name '*.pb.h' >&2
  exit 1
fi
cmake -S examples/quickstart -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_PREFIX_PATH=$prefix_path" >/dev/null
cmake --build "$work/build"
"$work/build/est-quickstart" "$work/model"
echo "ok: examples/quickstart built against $(find "$work/prefix/include" -name '*.h' | wc -l) installed headers and ran"
