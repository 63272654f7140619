/**
 * Dev only (`npm run dev`): a {@link KvPublisher} into the local KV of the `wrangler dev` beside
 * it. CONNECTIONS_LOCAL_KV_DIR names wrangler dev's state (`.wrangler/state/v3`); a Miniflare of
 * our own over that directory, with the CONNECTIONS namespace under wrangler.toml's id, writes the
 * same SQLite store wrangler dev reads, and a running wrangler dev sees each write at once (its
 * cacheTtl aside). Miniflare is a dev dependency: it is imported only when the setting is set,
 * which production never does (there, the REST publisher: kv-rest.ts).
 * @module
 */
import { type KvPublisher, namespacePublisher } from './kv'

/** wrangler.toml's top-level CONNECTIONS id: the namespace wrangler dev keeps locally. */
export const LOCAL_NAMESPACE_ID = '0'.repeat(32)

export interface LocalKv {
  kv: KvPublisher
  dispose(): Promise<void>
}

export async function localKvPublisher(stateDir: string): Promise<LocalKv> {
  const { Miniflare } = await import('miniflare')
  const mf = new Miniflare({
    modules: true,
    script: 'export default { fetch() { return new Response(null, { status: 404 }) } }',
    kvNamespaces: { CONNECTIONS: LOCAL_NAMESPACE_ID },
    defaultPersistRoot: stateDir,
  })
  const namespace = await mf.getKVNamespace('CONNECTIONS')
  return { kv: namespacePublisher(namespace), dispose: () => mf.dispose() }
}
