# syntax=docker/dockerfile:1
# The function's runtime image: Node 24 LTS, production dependencies only,
# distroless (no shell, no package manager), running as a non-root user.
# Crossplane runs it as `dist/main.js` with --tls-server-certs-dir /tls/server.

FROM node:24-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
# Scripts are skipped: the node@24 dev dependency only matters outside this image.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts/link-main.mjs ./scripts/
COPY src ./src
RUN ./node_modules/.bin/tsc -p tsconfig.build.json && node scripts/link-main.mjs

FROM node:24-bookworm-slim AS deps
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM gcr.io/distroless/nodejs24-debian12:nonroot
WORKDIR /function
COPY --from=deps /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
COPY package.json ./
# Everything is read-only at run time: the image works with readOnlyRootFilesystem.
USER 65532:65532
EXPOSE 9443
ENV NODE_ENV=production
# A small young generation: peak memory under load halves at no measurable CPU cost (npm run bench).
ENTRYPOINT ["/nodejs/bin/node", "--max-semi-space-size=1", "dist/main.js"]
