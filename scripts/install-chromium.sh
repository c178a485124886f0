#!/usr/bin/env bash
# The console's browser tests (npm run test:console) drive Debian's chromium through playwright-core. Installs it
# when missing (CI runs this; as root, or with sudo available). CHROMIUM_PATH overrides where the tests look.
set -euo pipefail
path="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -x "$path" ]; then
  echo "chromium: $("$path" --version 2>/dev/null || echo "$path")"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium
"$path" --version
