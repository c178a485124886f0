# The worker, the API and the bank sandbox share one image; compose builds it once and picks the command
# (`node dist/...`: the build output, never compiled at start). Node 24 LTS, pinned to the release CI runs the suite
# on (NODE_LTS in .ci/run; test/deploy/docker-compose.test.ts keeps the two equal).
FROM node:24.21.0-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# The pinned Node of the npm scripts (a development dependency: pruned below; the image runs the base image's Node).
COPY packages/node-runtime/package.json ./packages/node-runtime/
# No Temporal binaries in the image (the postinstall toolchain is for local runs): the cluster is separate.
# Behind a proxy that re-signs TLS, pass its CA bundle as the build secret `npm-ca` (it never reaches a layer):
#   podman build --secret id=npm-ca,src=/etc/ssl/certs/ca-certificates.crt .   (scripts/containers/build-app-image.sh)
RUN --mount=type=secret,id=npm-ca,target=/run/secrets/npm-ca \
  if [ -s /run/secrets/npm-ca ]; then export NODE_EXTRA_CA_CERTS=/run/secrets/npm-ca; fi \
  && npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json temporal-toolchain.json ./
COPY scripts/build.mjs ./scripts/
COPY src ./src
# npm run build = scripts/build.mjs: tsc (TypeScript 7, the native compiler), then the workflow bundles
# (dist/workflow-bundle.js + .json, and workflow-bundle-tracing.* with the tracing interceptors, for workers with
# OTEL_* set): workers load one instead of running webpack at start.
# The image refuses to build if either would be refused at start.
RUN npm run build \
  && node -e "const b = require('./dist/worker/prebuilt-workflow-bundle.js'); b.loadWorkflowBundle(); b.loadWorkflowBundle(undefined, { tracing: true })" \
  && npm prune --omit=dev --ignore-scripts

FROM node:24.21.0-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
# dist holds the bundle and its inputs (dist/workflows, dist/shared), which the worker hashes at start.
COPY --from=build /app/dist ./dist
COPY package.json temporal-toolchain.json ./
# `npm run worker|api|sandbox` work in the image too: their pre-script checks the build output (node only).
COPY scripts/check-build.mjs scripts/healthcheck.cjs ./scripts/
# Not root: the files above stay root's (read-only to the process); `node` is the base image's uid 1000. They run with
# a read-only root file system and no tmpfs (npm run test:image). The one thing written is the API's audit trail
# when it is a file (AUDIT_LOG, docs/security.md "Audit trail"): by default in the volume /var/lib/paylater, owned by
# `node`. Several API processes share one trail in Postgres instead: AUDIT_LOG=postgres://… (compose, the Helm chart).
RUN mkdir -p /var/lib/paylater && chown node:node /var/lib/paylater && chmod 0700 /var/lib/paylater
ENV AUDIT_LOG=file:/var/lib/paylater/audit/audit.jsonl
# Merchants' payload keys (docs/security.md "A payload key per merchant"): read only by default here, since each
# container's volume is its own; a deployment whose processes share a store (MERCHANT_KEY_STORE=postgres://…) sets
# MERCHANT_KEY_ENCRYPTION=on once every worker runs this build (docs/operations.md).
ENV MERCHANT_KEY_STORE=file:/var/lib/paylater/keys/merchant-keys.json
ENV MERCHANT_KEY_ENCRYPTION=decrypt-only
VOLUME /var/lib/paylater
USER node
# 3000: the public listener (the bank's webhooks); 3001: the internal listener (merchant facade, /readyz, /metrics);
# 9464: the worker's WORKER_METRICS_PORT (/metrics, /healthz, /readyz).
EXPOSE 3000 3001 9464
# One check for the three processes: scripts/healthcheck.cjs finds which one runs and probes its route on the port
# its variables set (the worker's and the API's /readyz, the sandbox's /_sandbox). Kept by a Docker-format build
# (scripts/containers/build-app-image.sh); an OCI-format build drops it.
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s --retries=3 CMD ["node", "scripts/healthcheck.cjs"]
CMD ["node", "dist/worker.js"]
