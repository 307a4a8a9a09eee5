#!/usr/bin/env bash
# Adds PIP_SPEC... to the existing Python virtual environment VENV_DIR without their
# dependencies (pip --no-deps), once: where VENV_DIR's Python already imports MODULE it does
# nothing. For packages whose declared dependencies the environment provides under another
# name: tensorflow-serving-api, which names tensorflow, added to tf-venv's tensorflow-cpu
# (make serving-clients).
set -euo pipefail
usage="usage: add_to_venv.sh VENV_DIR MODULE PIP_SPEC..."
venv=${1:?$usage}
module=${2:?$usage}
shift 2
[ $# -gt 0 ] || { echo "$usage" >&2; exit 2; }
[ -x "$venv/bin/python" ] || { echo "add_to_venv: no virtual environment at $venv" >&2; exit 1; }
if "$venv/bin/python" -c "import $module" 2>/dev/null; then
  exit 0
fi
log=/tmp/est-pip-$module.log
echo "add_to_venv: adding $* to $venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "$@" >"$log" 2>&1 \
  || { echo "add_to_venv: pip install --no-deps $* failed, see $log" >&2; tail -20 "$log" >&2; exit 1; }
