#!/usr/bin/env bash
# npm run test:helm: the Helm chart (deploy/helm/paylater) checked offline, with the pinned tools of
# scripts/helm-tools.sh: `helm lint --strict` and `helm template` with every values set, kubeconform -strict on every
# rendered object against the Kubernetes schemas and the CRD schemas of deploy/helm/schemas (a kind without a schema
# fails), then the invariants of test/deploy/helm-chart.test.ts. docs/deploying.md "Kubernetes (Helm chart)".
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
bin="$(bash scripts/helm-tools.sh | tail -n 1)"
helm="$bin/helm"
kubeconform="$bin/kubeconform"
kubernetes_schemas="$(ls -d "$root"/.tools/schemas/kubernetes-* | head -n 1)"
chart=deploy/helm/paylater
rendered="$root/.tools/rendered"
rm -rf "$rendered" && mkdir -p "$rendered"

# The values sets: each example over values.yaml (examples/minimal.yaml: only what has no default).
for example in "$chart"/examples/*.yaml; do
  set="$(basename "$example" .yaml)"
  args=(-f "$example")
  echo "== $set"
  "$helm" lint --strict "$chart" "${args[@]}" --namespace payments --quiet
  "$helm" template paylater "$chart" "${args[@]}" --namespace payments >"$rendered/$set.yaml"
  "$kubeconform" -strict -summary -output text \
    -schema-location "$kubernetes_schemas/{{.ResourceKind}}{{.KindSuffix}}.json" \
    -schema-location "$root/deploy/helm/schemas/{{.Group}}/{{.ResourceKind}}_{{.ResourceAPIVersion}}.json" \
    "$rendered/$set.yaml"
done

# The invariants, with helm required (the test fails rather than skips).
PAYLATER_REQUIRE_TOOLS=1 HELM_PATH="$helm" exec node scripts/jest.mjs "$@" --selectProjects helm
