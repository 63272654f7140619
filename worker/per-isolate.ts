/**
 * Things built once per isolate and object: workerd hands the same `env` to every request of an
 * isolate, so settings parsed from it, and the clients built from those settings, are made once
 * and kept as long as the object lives (a WeakMap: a test's own env gets its own entry).
 * @module
 */
export function perIsolate<K extends object, V>(make: (key: K) => V): (key: K) => V {
  const made = new WeakMap<K, { value: V }>()
  return (key) => {
    let entry = made.get(key)
    if (!entry) {
      entry = { value: make(key) }
      made.set(key, entry)
    }
    return entry.value
  }
}
