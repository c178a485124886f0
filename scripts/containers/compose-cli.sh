#!/usr/bin/env bash
# Prints the path of a Docker Compose v2 CLI for the compose test, building it on first use from its Go module
# (github.com/docker/compose/v2, no registry or download site needed) into .temporal/containers/docker-compose,
# stamped with its version. Debian bookworm's docker-compose is v1 (1.29), which knows neither `secrets:` from
# `environment:` nor the compose file's other current syntax; podman-compose 1.0.3 waits for no health condition.
# The module's go.mod has exclude directives, which `go install module@version` refuses: built with `go build` in
# the module cache's copy. A first build takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
version="${COMPOSE_CLI_VERSION:-v2.40.3}"
bin="$PWD/.temporal/containers/docker-compose"
if [ -x "$bin" ] && [ "$(cat "$bin.version" 2>/dev/null)" = "$version" ]; then
  echo "$bin"
  exit 0
fi
# Go's own installer puts it in /usr/local/go/bin, which a login shell's PATH may not name.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then PATH="/usr/local/go/bin:$PATH"; fi
command -v go >/dev/null || {
  echo "compose-cli: Go is needed to build github.com/docker/compose/v2@$version" >&2
  exit 1
}
mkdir -p "$(dirname "$bin")"
echo "compose-cli: building github.com/docker/compose/v2@$version (minutes, once)" >&2
dir="$(cd "$(dirname "$bin")" && go mod download -json "github.com/docker/compose/v2@$version" |
  node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(JSON.parse(s).Dir))')"
CGO_ENABLED=0 go -C "$dir" build -trimpath -ldflags "-s -w -X github.com/docker/compose/v2/internal.Version=$version" \
  -o "$bin" ./cmd >&2
echo "$version" >"$bin.version"
echo "$bin"
