/**
 * Where the publisher writes the edge copy: a {@link KvPublisher}. Production's is Cloudflare's
 * REST bulk API (kv-rest.ts); tests and a local stack write into the Worker's own namespace
 * through a KV binding object ({@link namespacePublisher}: Miniflare's
 * `mf.getKVNamespace('CONNECTIONS')` returns one), so the same publisher and records run in both.
 * @module
 */

export interface KvPair {
  key: string
  value: string
}

export interface KvPublisher {
  /** Writes every pair, or throws naming how many were not written (never a value). */
  put(pairs: readonly KvPair[]): Promise<void>
  /** Deletes every key (an absent one included), or throws. */
  delete(keys: readonly string[]): Promise<void>
}

/** What the publisher needs of a KV binding (workerd's KVNamespace, Miniflare's from Node). */
export interface KvNamespaceLike {
  put(key: string, value: string): Promise<unknown>
  delete(key: string): Promise<unknown>
}

/** Writes through a binding, a few keys at a time (a binding has no bulk write). */
export function namespacePublisher(namespace: KvNamespaceLike, parallel = 16): KvPublisher {
  const each = async <T>(items: readonly T[], work: (item: T) => Promise<unknown>) => {
    for (let i = 0; i < items.length; i += parallel) {
      await Promise.all(items.slice(i, i + parallel).map(work))
    }
  }
  return {
    put: (pairs) => each(pairs, (pair) => namespace.put(pair.key, pair.value)),
    delete: (keys) => each(keys, (key) => namespace.delete(key)),
  }
}
