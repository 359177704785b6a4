# disarm: the service and the programs it runs, nothing else.
#
#   docker build -t disarm .
#   docker run --rm -p 8080:8080 -p 8081:8081 -v disarm-data:/var/lib/disarm -e DISARM_ADMIN_TOKEN disarm
#   docker run --rm -v disarm-data:/var/lib/disarm disarm admin org create --name "Acme" --plan starter
#
# The same image runs every role: docker-compose.yml starts it as the API and as workers, with
# clamd as a service of its own. The Node line is one the project targets (22 and 24 LTS),
# pinned to a release so a rebuild gets the same runtime.
ARG NODE_IMAGE=node:24.22.3-bookworm-slim

# ── Build: the runtime tree, by the script anyone can run without Docker ───────────────────────
# scripts/build-runtime-tree.mjs runs `npm ci` and `npm run build`, then installs the service's
# workspaces alone with their production dependencies and removes whatever they cannot reach.
FROM ${NODE_IMAGE} AS build
# better-sqlite3 compiles itself when no prebuilt binary matches.
RUN apt-get update -qq \
  && apt-get install -y -qq --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN node scripts/build-runtime-tree.mjs /app --work /src

# ── Run: Node, the runtime tree, and the Debian packages the service runs ──────────────────────
FROM ${NODE_IMAGE}
# scripts/system-packages/runtime.list: Chromium, LibreOffice Calc and Impress with python3-uno,
# a font, tini. The tests' tools (test.list: PostgreSQL, exiftool, qpdf, clamscan…) stay out.
COPY scripts/ensure-system-deps.sh /tmp/deps/ensure-system-deps.sh
COPY scripts/system-packages/runtime.list /tmp/deps/system-packages/runtime.list
RUN bash /tmp/deps/ensure-system-deps.sh --runtime \
  && rm -rf /var/lib/apt/lists/* /tmp/deps
# Never root: a worker handles hostile files.
RUN groupadd --system --gid 10001 disarm \
  && useradd --system --uid 10001 --gid disarm --home-dir /var/lib/disarm --shell /usr/sbin/nologin disarm \
  && install -d -o disarm -g disarm -m 0700 /var/lib/disarm /var/lib/disarm/secrets
COPY --from=build --chown=root:root /app /app
# `disarm` on the PATH, for `docker compose exec api disarm admin …` and `docker run … disarm …`.
RUN ln -s /app/packages/node/bin/disarm.mjs /usr/local/bin/disarm
ENV NODE_ENV=production \
    DISARM_HOST=0.0.0.0 \
    DISARM_DATA_DIR=/var/lib/disarm
USER disarm
VOLUME ["/var/lib/disarm"]
EXPOSE 8080 8081
# Ready, not just alive: /readyz answers 200 once the store answers and the workers are up. The
# image has no curl; Node's own fetch asks. (The worker role has no listener: compose turns this
# check off there.)
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=6 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.DISARM_PORT ?? 8080}/readyz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# tini is PID 1: it hands signals to disarm and reaps any process orphaned inside the container.
ENTRYPOINT ["/usr/bin/tini", "--", "disarm"]
CMD ["serve", "--no-demo"]
