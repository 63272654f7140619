/// <reference types="@cloudflare/vitest-pool-workers/types" />
// `env` from cloudflare:workers is the generated Cloudflare.Env (worker/worker-configuration.d.ts).
