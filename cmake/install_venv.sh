#!/usr/bin/env bash
# Creates a Python virtual environment at VENV_DIR with PIP_SPEC... installed, once: where
# VENV_DIR's Python already imports MODULE it does nothing. Used for TensorBoard (tb-venv: the
# tests read our event and Example files with its reader), TensorFlow (tf-venv: the tf.data
# peer of make bench's input group) and Triton's client (triton-venv: the tests call our model
# server with it, and run exports' model.onnx in its onnxruntime). A failed install leaves no
# environment behind.
set -euo pipefail
venv=${1:?usage: install_venv.sh VENV_DIR MODULE PIP_SPEC...}
module=${2:?usage: install_venv.sh VENV_DIR MODULE PIP_SPEC...}
shift 2
[ $# -gt 0 ] || { echo "usage: install_venv.sh VENV_DIR MODULE PIP_SPEC..." >&2; exit 2; }
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import $module" 2>/dev/null; then
  exit 0
fi
log=/tmp/est-pip-$module.log
echo "install_venv: creating $venv with $*"
rm -rf "$venv"
# EST_VENV_SYSTEM_SITE_PACKAGES=1: the environment sees Debian's Python packages (python3-torch).
/usr/bin/python3 -m venv ${EST_VENV_SYSTEM_SITE_PACKAGES:+--system-site-packages} "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check "$@" >"$log" 2>&1 \
  || { rm -rf "$venv"; echo "install_venv: pip install $* failed, see $log" >&2; tail -20 "$log" >&2; exit 1; }
