#!/usr/bin/env bash
# The Python tools the tests use (scripts/python-requirements.txt), in a project-local virtual environment,
# .venv-tools/ (gitignored), never system-wide. Idempotent: reinstalls only when the requirements file changed.
# Prints the environment's python on stdout (progress goes to stderr). PYTHON picks the interpreter (default python3).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
venv="$root/.venv-tools"
requirements="$root/scripts/python-requirements.txt"
stamp="$venv/.requirements.sha256"
python="${PYTHON:-python3}"

if ! command -v "$python" >/dev/null 2>&1; then
  echo "python-tools: $python not found: install Python 3.9 or later (with venv), or set PYTHON" >&2
  exit 1
fi
# One install at a time (two test files may ask at once); flock is Linux's (macOS: one caller at a time).
mkdir -p "$venv"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$venv/.lock"
  flock 9
fi
wanted="$("$python" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$requirements")"
if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null || true)" != "$wanted" ]; then
  echo "python-tools: installing $requirements into $venv" >&2
  "$python" -m venv "$venv" >&2
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements" >&2
  echo "$wanted" >"$stamp"
fi
echo "$venv/bin/python"
