#!/usr/bin/env bash
# The tools of `npm run test:helm` (docs/deploying.md "Kubernetes (Helm chart)"), pinned, in the project's folder,
# never system-wide: helm and kubeconform built from the Go module proxy into .tools/bin (gitignored), and the
# Kubernetes JSON schemas of one Kubernetes version, taken from the PyPI package kubernetes-validate (which bundles
# them) into .tools/schemas/kubernetes-<version>. The chart's CRD schemas are checked in (deploy/helm/schemas).
# Idempotent: a tool is rebuilt only when the binary is missing or was built from another version. Progress goes to
# stderr; the last line on stdout is the bin folder.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tools="$root/.tools"
bin="$tools/bin"

# Helm 4 (Helm 3 receives security fixes only, docs/deploying.md); the chart is apiVersion v2, which both read.
HELM_MODULE=helm.sh/helm/v4
HELM_VERSION=v4.3.1
KUBECONFORM_MODULE=github.com/yannh/kubeconform
KUBECONFORM_VERSION=v0.8.0
# kubernetes-validate bundles the schemas of Kubernetes 1.25 to 1.37; the chart is validated against the oldest
# release it supports. The hash pins the wheel pip downloads.
KUBERNETES_VALIDATE_VERSION=1.37.0
KUBERNETES_VALIDATE_SHA256=85136d018a27b50ec7fc049d902bfa5193f5976807e6c0f408e3ab6fe078cad9
KUBERNETES_VERSION="${PAYLATER_KUBERNETES_VERSION:-1.32.0}"

mkdir -p "$bin"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$tools/.lock"
  flock 9
fi

# The module version a Go binary was built from ("mod <module> <version>" in its build info), empty when absent.
built_version() {
  [ -x "$1" ] || return 0
  go version -m "$1" 2>/dev/null | awk -v m="$2" '$1 == "mod" && $2 == m { print $3 }'
}

install_go_tool() {
  local name="$1" module="$2" version="$3" package="$4"
  if [ "$(built_version "$bin/$name" "$module")" = "$version" ]; then
    return 0
  fi
  # Go's own installer puts it in /usr/local/go/bin, which a login shell's PATH may not name.
  if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
    PATH="/usr/local/go/bin:$PATH"
  fi
  if ! command -v go >/dev/null 2>&1; then
    echo "helm-tools: go not found: install Go 1.24 or later (it builds $name $version)" >&2
    exit 1
  fi
  echo "helm-tools: building $name $version into $bin" >&2
  GOBIN="$bin" GOFLAGS=-buildvcs=false go install "$package@$version" >&2
  test "$(built_version "$bin/$name" "$module")" = "$version"
}

install_go_tool helm "$HELM_MODULE" "$HELM_VERSION" "$HELM_MODULE/cmd/helm"
install_go_tool kubeconform "$KUBECONFORM_MODULE" "$KUBECONFORM_VERSION" "$KUBECONFORM_MODULE/cmd/kubeconform"

# The Kubernetes schemas: the package's "local-strict" files reference one shared definitions file by URL, which
# kubeconform would fetch; scripts/kubernetes-schemas.mjs makes each kind's schema standalone.
schemas="$tools/schemas/kubernetes-$KUBERNETES_VERSION"
stamp="$schemas/.source"
source_id="kubernetes-validate==$KUBERNETES_VALIDATE_VERSION v$KUBERNETES_VERSION-local-strict"
if [ "$(cat "$stamp" 2>/dev/null || true)" != "$source_id" ]; then
  echo "helm-tools: Kubernetes $KUBERNETES_VERSION schemas from $source_id into $schemas" >&2
  download="$tools/cache/pypi"
  mkdir -p "$download"
  python="${PYTHON:-python3}"
  requirement="$download/kubernetes-validate.txt"
  echo "kubernetes-validate==$KUBERNETES_VALIDATE_VERSION --hash=sha256:$KUBERNETES_VALIDATE_SHA256" >"$requirement"
  "$python" -m pip download --quiet --disable-pip-version-check --no-input --no-deps --only-binary=:all: \
    --require-hashes -r "$requirement" -d "$download" >&2
  wheel="$download/kubernetes_validate-$KUBERNETES_VALIDATE_VERSION-py3-none-any.whl"
  rm -rf "$schemas" "$tools/cache/extract"
  "$python" - "$wheel" "$tools/cache/extract" "v$KUBERNETES_VERSION-local-strict" <<'PY' >&2
import sys, zipfile
wheel, target, folder = sys.argv[1:]
prefix = f"kubernetes_validate/kubernetes-json-schema/{folder}/"
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(prefix) and n.endswith(".json")]
    if not names:
        sys.exit(f"{folder} is not in {wheel}")
    for n in names:
        z.extract(n, target)
PY
  node "$root/scripts/kubernetes-schemas.mjs" \
    "$tools/cache/extract/kubernetes_validate/kubernetes-json-schema/v$KUBERNETES_VERSION-local-strict" "$schemas" >&2
  rm -rf "$tools/cache/extract"
  echo "$source_id" >"$stamp"
fi

echo "$bin"
