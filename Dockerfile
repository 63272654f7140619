# The origin (origin/main.ts) as a container: `docker build -t inbound-dedup-origin .`
#
#   serve:    docker run -e DATABASE_URL=... -e ORIGIN_SHARED_SECRET=... -p 8788:8788 inbound-dedup-origin
#   migrate:  docker run --rm -e DATABASE_URL=... inbound-dedup-origin node --import tsx ops/migrate.ts
#
# Migrations are a one-shot command of their own (run it before each new version starts), never
# part of the origin's start. The origin answers SIGTERM itself (it drains, then exits 0), so node
# runs as PID 1 without an init. Postgres: any 15+ over TCP (DATABASE_DRIVER unset: chosen by the
# URL) or Neon. compose.yaml runs it with a Postgres of its own. test/local/origin-image.test.ts
# performs these steps in a clean directory; keep each COPY on one line (it reads them).

# Production dependencies only (tsx runs the TypeScript sources; dbmate ships its binary).
FROM node:22-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund

FROM node:22-bookworm-slim AS runtime
ENV NODE_ENV=production
# Listen on every interface of the container (the origin's default is loopback only).
ENV ORIGIN_HOST=0.0.0.0
ENV ORIGIN_PORT=8788
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY contract ./contract
COPY shared ./shared
COPY email ./email
COPY claims ./claims
COPY idempotency-http ./idempotency-http
COPY origin ./origin
COPY migrations ./migrations
COPY ops/migrate.ts ./ops/migrate.ts
USER node
EXPOSE 8788
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.ORIGIN_PORT || 8788) + '/healthz', { signal: AbortSignal.timeout(2000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "--import", "tsx", "origin/main.ts"]
