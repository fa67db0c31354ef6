# syntax=docker/dockerfile:1
# One image for every role: the command picks serve (default), work or start.
# .ci/container-recipe runs the same steps without Docker, so CI proves them.

# Build with dev dependencies, then keep only the production ones.
FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY src ./src
# typescript goes by hand: bull-board's valibot names it as an optional peer, so npm counts it as an
# optional production dependency, which --omit=dev keeps and --omit=optional would take with
# msgpackr-extract. Nothing loads it at run time. .ci/container-recipe checks it is gone.
RUN npm run build && npm prune --omit=dev --no-audit --no-fund \
  && rm -rf node_modules/typescript node_modules/.bin/tsc node_modules/.bin/tsserver

# Production dependencies and dist/ only (package.json says the code is ESM), run as the image's
# unprivileged "node" user. Rules files and handler modules are mounted (see docker-compose.yml).
FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
USER node
EXPOSE 3000 9464
HEALTHCHECK --interval=15s --timeout=5s --start-period=15s --retries=3 \
  CMD ["node", "dist/cli/main.js", "healthcheck"]
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["serve"]
