#!/usr/bin/env bash
# Installs a build of TorchEstimator into a temporary prefix and runs its programs from there
# (est-launch starting est-train to train, and an evaluator that exports), then configures,
# builds and runs the standalone projects (examples/quickstart/, and examples/serving/, which
# exports a model of its own and serves it with the installed est-serve) against that prefix
# only, so a header, target or program the install lacks fails here as it would for a user.
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
# The programs, run from the install: est-launch starts est-train, which trains and exports.
for program in est-train est-launch est-serve est-idx-to-tfrecord; do
  if [[ ! -x "$work/prefix/bin/$program" ]]; then
    echo "error: the install lacks $work/prefix/bin/$program" >&2
    exit 1
  fi
  "$work/prefix/bin/$program" --help >/dev/null
done
"$work/prefix/bin/est-launch" --workers 1 --evaluator -- "$work/prefix/bin/est-train" --model linear --strategy multi_worker \
  --model-dir "$work/installed-model" --max-steps 20 --log-step-count-steps 100 --export final >/dev/null 2>&1 || {
  echo "error: est-launch and est-train from the install did not train (exit status $?)" >&2
  exit 1
}
if ! ls "$work/installed-model/export/final/"*/export.json >/dev/null 2>&1; then
  echo "error: est-train from the install wrote no export" >&2
  exit 1
fi
cmake -S examples/quickstart -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_PREFIX_PATH=$prefix_path" >/dev/null
cmake --build "$work/build"
"$work/build/est-quickstart" "$work/model"
cmake -S examples/serving -B "$work/serving-build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  "-DCMAKE_PREFIX_PATH=$prefix_path" >/dev/null
cmake --build "$work/serving-build"
# The Python with onnxruntime that runs the example's model.onnx (make serving-clients).
onnx_python=$(cached EST_TRITON_PYTHON)
python3 tests/serving/serving_example_test.py "$work/serving-build/est-serving-example" "$work/prefix/bin/est-serve" \
  "${onnx_python:-$PWD/build/triton-venv/bin/python}"
echo "ok: the installed est-launch and est-train trained and exported; examples/quickstart and examples/serving built against" \
  "$(find "$work/prefix/include" -name '*.h' | wc -l) installed headers and ran"
