#!/usr/bin/env bash
# Builds local stand-ins for the registry images docker-compose.yml names (no container registry is reachable here),
# one Containerfile each under deploy/containers/<name>/, FROM the Debian base of scripts/containers/base-images.sh:
#   localhost/paylater-standin/postgres:15                 for postgres:16 (Debian's PostgreSQL 15)
#   localhost/paylater-standin/temporal-server:1.32.0      for temporalio/server:1.32.0 (go.temporal.io/server)
#   localhost/paylater-standin/temporal-admin-tools:1.32.0 for temporalio/admin-tools:1.32.0 (CLI 1.9.1, sql tool)
#   localhost/paylater-standin/temporal-ui:2.54.1          for temporalio/ui:2.54.1 (github.com/temporalio/ui-server/v2)
#   localhost/paylater-standin/nginx:1.22                  for nginx:1.30-alpine (Debian's nginx)
#   localhost/paylater-standin/prometheus:2.42             for prom/prometheus:v2.55.1 (Debian's prometheus)
# They never carry the official names: deploy/containers/compose.local-images.yml points compose at them.
# Idempotent and cached: each image is labelled with a hash of its build context (and base image), and rebuilt only
# when that changes (FORCE=1 rebuilds all). Go builds land in .temporal/ (the server's by
# `node scripts/temporal-toolchain.mjs cluster`, the UI server's here), so a warm run builds nothing.
# Usage: scripts/containers/service-images.sh [name…]   (default: all six)
set -euo pipefail
# Go's own installer puts it in /usr/local/go/bin, which a login shell's PATH may not name.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then PATH="/usr/local/go/bin:$PATH"; fi
cd "$(dirname "$0")/../.."
root=$PWD
# shellcheck source=scripts/containers/env.sh
source scripts/containers/env.sh
scripts/containers/base-images.sh >/dev/null

base=localhost/paylater-base/debian:bookworm
ui_version=2.54.1
all=(postgres temporal-server temporal-admin-tools temporal-ui nginx prometheus)
[ $# -gt 0 ] && all=("$@")

declare -A tag=(
  [postgres]=15
  [temporal-server]=1.32.0
  [temporal-admin-tools]=1.32.0
  [temporal-ui]=$ui_version
  [nginx]=1.22
  [prometheus]=2.42
)

# The Temporal server module's binaries and files (built on first use: minutes; then cached in .temporal/bin).
cluster_json=""
cluster() {
  [ -n "$cluster_json" ] || cluster_json="$(node scripts/temporal-toolchain.mjs cluster)"
  node -e 'process.stdout.write(JSON.parse(process.argv[1])[process.argv[2]])' "$cluster_json" "$1"
}

go_module_dir() {
  (cd "$root/.temporal" && go mod download -json "$1") | node -e \
    'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>process.stdout.write(JSON.parse(s).Dir))'
}

# ui-server from its Go module (the UI assets are embedded in the module), stamped with its version.
ui_server() {
  local bin="$root/.temporal/containers/ui-server"
  if [ ! -x "$bin" ] || [ "$(cat "$bin.version" 2>/dev/null)" != "$ui_version" ]; then
    mkdir -p "$(dirname "$bin")"
    echo "service-images: building github.com/temporalio/ui-server/v2@v$ui_version (about a minute)" >&2
    CGO_ENABLED=0 go -C "$(go_module_dir "github.com/temporalio/ui-server/v2@v$ui_version")" build -trimpath \
      -o "$bin" ./cmd/server
    echo "$ui_version" >"$bin.version"
  fi
  echo "$bin"
}

# Fills the build context $2 of image $1: its folder, plus the files built or read elsewhere.
context() {
  local name=$1 ctx=$2 module
  cp -R "deploy/containers/$name/." "$ctx/"
  case "$name" in
    temporal-server)
      module="$(dirname "$(cluster schemaDir)")"
      cp "$(cluster server)" "$ctx/temporal-server"
      cp "$module/docker/scripts/sh/entrypoint.sh" "$ctx/entrypoint.sh"
      ;;
    temporal-admin-tools)
      node scripts/temporal-toolchain.mjs install --optional >&2
      [ -x .temporal/bin/temporal ] || {
        echo "service-images: no .temporal/bin/temporal (npm run toolchain)" >&2
        exit 1
      }
      cp .temporal/bin/temporal "$ctx/temporal"
      cp "$(cluster sqlTool)" "$ctx/temporal-sql-tool"
      cp -R "$(cluster schemaDir)" "$ctx/schema"
      ;;
    temporal-ui)
      module="$(go_module_dir "github.com/temporalio/ui-server/v2@v$ui_version")"
      cp "$(ui_server)" "$ctx/ui-server"
      cp "$module/config/docker.yaml" "$ctx/docker.yaml"
      cp "$module/docker/start-ui-server.sh" "$ctx/start-ui-server.sh"
      chmod 755 "$ctx/start-ui-server.sh"
      ;;
  esac
  # The module cache's files are read-only: the image's copies need not be.
  chmod -R u+w "$ctx"
}

base_id="$(podman image inspect --format '{{.Id}}' "$base")"
for name in "${all[@]}"; do
  [ -n "${tag[$name]:-}" ] || {
    echo "service-images: no image $name (one of: ${!tag[*]})" >&2
    exit 2
  }
  image="localhost/paylater-standin/$name:${tag[$name]}"
  ctx="$(mktemp -d)"
  context "$name" "$ctx"
  inputs="$( (
    echo "$base_id"
    cd "$ctx" && find . -type f -print0 | sort -z | xargs -0 sha256sum
    find . -printf '%m %p\n' | sort
  ) | sha256sum | cut -c1-32)"
  have="$(podman image inspect --format '{{index .Labels "paylater.standin.inputs"}}' "$image" 2>/dev/null || true)"
  if [ "${FORCE:-0}" != 1 ] && [ "$have" = "$inputs" ]; then
    echo "service-images: $image up to date"
  else
    echo "service-images: building $image"
    start=$(date +%s)
    podman build --quiet --pull=never --format docker --label "paylater.standin.inputs=$inputs" \
      --label "paylater.standin.for=$(sed -n 's/^# Stand-in for \([^ ]*\).*/\1/p' "$ctx/Containerfile")" \
      -t "$image" -f "$ctx/Containerfile" "$ctx" >/dev/null
    echo "service-images: built $image in $(($(date +%s) - start)) s"
  fi
  rm -rf "$ctx"
done
