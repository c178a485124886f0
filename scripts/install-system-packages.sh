#!/usr/bin/env bash
# The Debian packages some test steps need, installed only when asked (.ci/run runs this; nothing in `npm install`
# does): chromium for `npm run test:console` (driven by playwright-core), prometheus for its promtool (the
# Prometheus rule and /metrics checks of `npm test`; `npm run toolchain` can build promtool with Go instead) and
# postgresql for `npm run test:cluster`. As root, or with sudo. A package whose command is already there is skipped.
# CHROMIUM_PATH overrides where the console tests look for the browser.
# --containers: also podman, buildah, runc, slirp4netns and mmdebstrap, for `npm run test:image` (the image built
# from Debian and npm packages by scripts/containers/, run with podman; its containers' network is slirp4netns).
# --compose: those, and what `npm run test:compose` needs besides (scripts/containers/compose-test.sh): Debian's
# docker.io is the engine it starts by hand, with iptables (Go, for the Compose CLI and the Temporal binaries, is not
# a Debian package here: bookworm's is too old).
set -euo pipefail
containers=0
compose=0
for arg in "$@"; do
  case "$arg" in
    --containers) containers=1 ;;
    --compose) containers=1 compose=1 ;;
    *) echo "usage: $0 [--containers] [--compose]" >&2; exit 2 ;;
  esac
done
want=()
[ -x "${CHROMIUM_PATH:-/usr/bin/chromium}" ] || want+=(chromium)
command -v promtool >/dev/null || want+=(prometheus)
command -v pg_config >/dev/null || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || want+=(postgresql)
if [ "$containers" = 1 ]; then
  for tool in podman buildah runc slirp4netns mmdebstrap; do command -v "$tool" >/dev/null || want+=("$tool"); done
fi
if [ "$compose" = 1 ]; then
  for pair in dockerd:docker.io iptables:iptables; do
    command -v "${pair%%:*}" >/dev/null || want+=("${pair#*:}")
  done
fi
if [ "${#want[@]}" -eq 0 ]; then
  echo "system packages: chromium, promtool and PostgreSQL are there$([ "$containers" = 1 ] && echo ', and the container tools')"
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "system packages: installing ${want[*]}"
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
