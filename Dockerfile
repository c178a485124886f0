# The worker, the API and the bank sandbox share one image; compose picks the command.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No Temporal binaries in the image (the postinstall toolchain is for local runs): the cluster is separate.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json temporal-toolchain.json ./
COPY src ./src
# npm run build = tsc, then the workflow bundle (dist/workflow-bundle.js + .json): workers load it instead of
# running webpack at start. The image refuses to build if the bundle would be refused at start.
RUN npm run build \
  && node -e "require('./dist/prebuilt-workflow-bundle.js').loadWorkflowBundle()" \
  && npm prune --omit=dev --ignore-scripts

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
# dist holds the bundle and its inputs (dist/workflows, dist/shared), which the worker hashes at start.
COPY --from=build /app/dist ./dist
COPY package.json temporal-toolchain.json ./
USER node
# 3000: the public listener (the bank's webhooks); 3001: the internal listener (merchant facade, /readyz, /metrics).
EXPOSE 3000 3001
CMD ["node", "dist/worker.js"]
