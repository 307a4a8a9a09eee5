#!/usr/bin/env bash
# Creates a Python virtual environment with TensorFlow (CPU) at $1 (once), so that make bench
# can run the tf.data peer of the input group (apps/bench/tfdata_peer.py).
set -euo pipefail
venv=${1:?usage: install_tensorflow.sh VENV_DIR}
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import tensorflow' 2>/dev/null; then
  exit 0
fi
echo "install_tensorflow: creating $venv"
rm -rf "$venv"
/usr/bin/python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check 'tensorflow-cpu==2.15.*' >/tmp/est-tf-pip.log 2>&1 \
  || { rm -rf "$venv"; echo "install_tensorflow: pip failed, see /tmp/est-tf-pip.log" >&2; tail -20 /tmp/est-tf-pip.log >&2
       exit 1; }
