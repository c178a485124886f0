#!/usr/bin/env bash
# `npm run test:compose`: docker-compose.yml started for real (test/compose/run.mts says what it proves).
#   1. a private Docker engine (scripts/containers/dockerd.sh; stopped again at the end if this run started it),
#   2. the Compose v2 CLI from its Go module (scripts/containers/compose-cli.sh),
#   3. the images, with podman: the application image from the Dockerfile as it is
#      (scripts/containers/build-app-image.sh, tag paylater:$PAYLATER_IMAGE_TAG, default `composetest`, so it never
#      replaces anyone's paylater:local) and the registry images' stand-ins (scripts/containers/service-images.sh),
#      copied into the engine when its copy differs (same image id: nothing copied),
#   4. test/compose/run.mts, under the compose project paylater-composetest.
# Needs: podman, runc, mmdebstrap, docker.io (dockerd), a docker CLI, Go; root.
# COMPOSE_TEST_KEEP=1 leaves the stack running after the run (then: down -v yourself); COMPOSE_TEST_KEEP_ENGINE=1
# leaves the engine running.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/containers/env.sh
source scripts/containers/env.sh
start=$(date +%s)
export PAYLATER_IMAGE_TAG="${PAYLATER_IMAGE_TAG:-composetest}"

engine_was_running=0
export DOCKER_HOST=unix:///run/paylater-docker/docker.sock
docker version >/dev/null 2>&1 && engine_was_running=1
scripts/containers/dockerd.sh start >/dev/null
stop_engine() {
  if [ "$engine_was_running" = 0 ] && [ "${COMPOSE_TEST_KEEP_ENGINE:-0}" != 1 ] && [ "${COMPOSE_TEST_KEEP:-0}" != 1 ]; then
    scripts/containers/dockerd.sh stop || true
  fi
}
trap stop_engine EXIT

COMPOSE_CLI="$(scripts/containers/compose-cli.sh)"
export COMPOSE_CLI
"$COMPOSE_CLI" version

echo "compose-test: the application image (the Dockerfile, as it is)"
scripts/containers/build-app-image.sh 2>&1 | tail -1
scripts/containers/service-images.sh

# Copies a podman image into the engine unless the engine has the same image id.
load() {
  local image=$1 id
  id="$(podman image inspect --format '{{.Id}}' "$image")"
  if [ "$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null)" = "sha256:$id" ]; then return; fi
  echo "compose-test: copying $image into the engine"
  podman save --format docker-archive "$image" | docker load -q >/dev/null
}
app="localhost/paylater:$PAYLATER_IMAGE_TAG"
load "$app"
# The compose file's name for it (x-app-image): the application image itself, not a stand-in.
docker tag "$app" "paylater:$PAYLATER_IMAGE_TAG"
while read -r image; do load "$image"; done < <(sed -n 's/^ *image: \(localhost\/paylater-standin\/.*\)$/\1/p' \
  deploy/containers/compose.local-images.yml | sort -u)
echo "compose-test: images ready in $(($(date +%s) - start)) s"

node=node
[ -x node_modules/.bin/node ] && node=node_modules/.bin/node
"$node" test/compose/run.mts
echo "compose-test: $(($(date +%s) - start)) s in all, images included"
