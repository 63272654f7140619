/**
 * Things built once per isolate and object: workerd hands the same `env` to every request of an
 * isolate, so settings parsed from it, and the clients built from those settings, are made once
 * and kept as long as the object lives (a WeakMap: a test's own env gets its own entry).
 * @module
 */
/**
 * Settings parsed once per isolate and env, their warnings logged then (once, not per request):
 * the Worker's settings and the API's share this.
 */
export function settingsPerIsolate<K extends object, V extends { warnings: readonly string[] }>(
  parse: (env: K) => V,
): (env: K) => V {
  return perIsolate((env: K) => {
    const settings = parse(env)
    for (const warning of settings.warnings) {
      console.warn(JSON.stringify({ level: 'warn', msg: 'config', warning }))
    }
    return settings
  })
}

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
