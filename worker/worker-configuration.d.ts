// Generated from wrangler.toml by `npm run types` (wrangler types). Do not edit.
declare namespace Cloudflare {
	interface GlobalProps {
		mainModule: typeof import("./index");
	}
	interface StagingEnv {
		CONNECTIONS: KVNamespace;
		SPOOL_BODIES: R2Bucket;
		SPOOL: Queue;
		SPOOL_DEAD: Queue;
		ORIGIN_URL: string;
		PUBLIC_BASE_URL: string;
		TELEGRAM_BOT_ID: string;
		DEDUP_TTL_SECONDS: string;
		CLAIM_LEASE_MS: string;
		ORIGIN_TIMEOUT_MS: string;
		REDIS_TIMEOUT_MS: string;
		INFLIGHT_WAIT_MS: string;
		MAX_BODY_BYTES: string;
		REDIS_KEY_PREFIX: string;
		SPOOL_MAX_ATTEMPTS: string;
		SPOOL_RETRY_BASE_SECONDS: string;
		SPOOL_RETRY_MAX_SECONDS: string;
		SETTLED_MEMO_ENTRIES: string;
		SETTLED_MEMO_SECONDS: string;
		DECISION_FLUSH_SECONDS: string;
		SHED_AFTER_FAILURES: string;
		SHED_SLOW_MS: string;
		SHED_OPEN_MS: string;
		SHED_MAX_INFLIGHT: string;
		CONNECTION_CACHE_SECONDS: string;
	}
	interface ProductionEnv {
		CONNECTIONS: KVNamespace;
		SPOOL_BODIES: R2Bucket;
		SPOOL: Queue;
		SPOOL_DEAD: Queue;
		ORIGIN_URL: string;
		PUBLIC_BASE_URL: string;
		TELEGRAM_BOT_ID: string;
		DEDUP_TTL_SECONDS: string;
		CLAIM_LEASE_MS: string;
		ORIGIN_TIMEOUT_MS: string;
		REDIS_TIMEOUT_MS: string;
		INFLIGHT_WAIT_MS: string;
		MAX_BODY_BYTES: string;
		REDIS_KEY_PREFIX: string;
		SPOOL_MAX_ATTEMPTS: string;
		SPOOL_RETRY_BASE_SECONDS: string;
		SPOOL_RETRY_MAX_SECONDS: string;
		SETTLED_MEMO_ENTRIES: string;
		SETTLED_MEMO_SECONDS: string;
		DECISION_FLUSH_SECONDS: string;
		SHED_AFTER_FAILURES: string;
		SHED_SLOW_MS: string;
		SHED_OPEN_MS: string;
		SHED_MAX_INFLIGHT: string;
		CONNECTION_CACHE_SECONDS: string;
	}
	interface Env {
		CONNECTIONS: KVNamespace;
		SPOOL_BODIES: R2Bucket;
		SPOOL: Queue;
		SPOOL_DEAD: Queue;
		ORIGIN_URL: string;
		PUBLIC_BASE_URL: string;
		TELEGRAM_BOT_ID: string;
		DEDUP_TTL_SECONDS: string;
		CLAIM_LEASE_MS: string;
		ORIGIN_TIMEOUT_MS: string;
		REDIS_TIMEOUT_MS: string;
		INFLIGHT_WAIT_MS: string;
		MAX_BODY_BYTES: string;
		REDIS_KEY_PREFIX: string;
		SPOOL_MAX_ATTEMPTS: string;
		SPOOL_RETRY_BASE_SECONDS: string;
		SPOOL_RETRY_MAX_SECONDS: string;
		SETTLED_MEMO_ENTRIES: string;
		SETTLED_MEMO_SECONDS: string;
		DECISION_FLUSH_SECONDS: string;
		SHED_AFTER_FAILURES: string;
		SHED_SLOW_MS: string;
		SHED_OPEN_MS: string;
		SHED_MAX_INFLIGHT: string;
		CONNECTION_CACHE_SECONDS: string;
	}
}
interface Env extends Cloudflare.Env {}
