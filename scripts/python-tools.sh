#!/usr/bin/env bash
# The project's Python tools, pinned, in a project-local virtual environment (.venv-tools/, gitignored), never
# system-wide: Schemathesis for the conformance run (npm run test:conformance). Idempotent: a venv that already
# holds the pinned versions is left as it is. Needs python3 (3.9+) with its venv module (Debian: python3-venv).
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv-tools
# name==version, one a line: bump here (the venv is brought up to date on the next run).
PINNED=(
  "schemathesis==4.32.5"
)

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
missing=()
for spec in "${PINNED[@]}"; do
  name="${spec%%==*}" want="${spec##*==}"
  have="$("$VENV/bin/python" -c "import importlib.metadata as m; print(m.version('$name'))" 2>/dev/null || true)"
  [ "$have" = "$want" ] || missing+=("$spec")
done
if [ ${#missing[@]} -gt 0 ]; then
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "${missing[@]}" >&2
fi
echo "$VENV/bin"
