# The worker, the API and the bank sandbox share one image; compose picks the command.
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No Temporal binaries in the image (the postinstall toolchain is for local runs): the cluster is separate.
RUN npm ci --ignore-scripts
COPY tsconfig.json tsconfig.build.json temporal-toolchain.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --ignore-scripts

FROM node:20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json temporal-toolchain.json ./
USER node
EXPOSE 3000
CMD ["node", "dist/worker.js"]
