#!/usr/bin/env bash
# The Debian packages some test steps need, installed only when asked (.ci/run runs this; nothing in `npm install`
# does): chromium for `npm run test:console` (driven by playwright-core), prometheus for its promtool (the
# Prometheus rule and /metrics checks of `npm test`; `npm run toolchain` can build promtool with Go instead) and
# postgresql for `npm run test:cluster`. As root, or with sudo. A package whose command is already there is skipped.
# CHROMIUM_PATH overrides where the console tests look for the browser.
# --compose: also what `npm run test:compose` needs (scripts/containers/compose-test.sh): podman, runc and mmdebstrap
# build its images, and Debian's docker.io is the engine it starts by hand (Go, for the Compose CLI and the Temporal
# binaries, is not a Debian package here: bookworm's is too old).
set -euo pipefail
compose=0
for arg in "$@"; do
  case "$arg" in
    --compose) compose=1 ;;
    *)
      echo "usage: install-system-packages.sh [--compose]" >&2
      exit 2
      ;;
  esac
done
want=()
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || want+=(chromium)
command -v promtool >/dev/null || want+=(prometheus)
command -v pg_config >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || want+=(postgresql)
if [ "$compose" = 1 ]; then
  for pair in podman:podman runc:runc mmdebstrap:mmdebstrap dockerd:docker.io iptables:iptables; do
    command -v "${pair%%:*}" >/dev/null || want+=("${pair#*:}")
  done
fi
if [ "${#want[@]}" -eq 0 ]; then
  echo "system packages: every one needed is there"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "system packages: installing ${want[*]}"
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
