# disarm: the service and the engine's system tools in one image.
#
#   docker build -t disarm .
#   docker run -p 8080:8080 -p 8081:8081 -v disarm-data:/var/lib/disarm disarm
#
# The same image runs every role: docker-compose.yml starts it as the API and as workers.

# ── Build: install every dependency, compile the packages, then drop the dev ones. ──────────
FROM node:20-bookworm-slim AS build
WORKDIR /app
# better-sqlite3 falls back to compiling when no prebuilt binary matches.
RUN apt-get update -qq \
  && apt-get install -y -qq --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY . .
RUN npm ci --no-audit --no-fund \
  && npm run build \
  && npm prune --omit=dev --no-audit --no-fund

# ── Run: Node, the built packages, and the tools the engine calls. ───────────────────────────
FROM node:20-bookworm-slim
# LibreOffice and Chromium (renderers), clamd, qpdf, poppler and the rest: the list the test
# command installs, so the image runs what the tests ran.
COPY scripts/ensure-system-deps.sh /tmp/ensure-system-deps.sh
RUN bash /tmp/ensure-system-deps.sh \
  && rm -rf /var/lib/apt/lists/* /tmp/ensure-system-deps.sh
# Never root: a worker handles hostile files.
RUN groupadd --system --gid 10001 disarm \
  && useradd --system --uid 10001 --gid disarm --home-dir /var/lib/disarm --shell /usr/sbin/nologin disarm \
  && install -d -o disarm -g disarm -m 0700 /var/lib/disarm /var/lib/disarm/secrets
WORKDIR /app
COPY --from=build --chown=root:root /app /app
ENV NODE_ENV=production \
    DISARM_HOST=0.0.0.0 \
    DISARM_DATA_DIR=/var/lib/disarm
USER disarm
VOLUME ["/var/lib/disarm"]
EXPOSE 8080 8081
ENTRYPOINT ["node", "/app/packages/node/bin/disarm.mjs"]
CMD ["serve", "--no-demo"]
