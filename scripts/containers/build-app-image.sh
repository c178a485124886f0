#!/usr/bin/env bash
# Builds the project's Dockerfile, unchanged, with podman (Docker's image format: HEALTHCHECK kept), tagged
# paylater:${PAYLATER_IMAGE_TAG:-local}. The base image comes from scripts/containers/base-images.sh (no registry is
# needed). The host's CA bundle is passed as the build secret `npm-ca` (for a proxy that re-signs TLS); it is mounted
# for the `npm ci` step only and never stored in a layer.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/containers/env.sh
source scripts/containers/env.sh
scripts/containers/base-images.sh
tag="localhost/paylater:${PAYLATER_IMAGE_TAG:-local}"
ca="${PAYLATER_BUILD_CA:-/etc/ssl/certs/ca-certificates.crt}"
secret=()
[ -s "$ca" ] && secret=(--secret "id=npm-ca,src=$ca")
start=$(date +%s)
podman build --pull=never --format docker "${secret[@]}" -t "$tag" -f Dockerfile .
echo "built $tag in $(($(date +%s) - start)) s: $(podman image inspect --format '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}')"
