/**
 * The deployment check (`npm run doctor`) of the registry at the edge: the CONNECTIONS KV
 * namespace bound with a namespace of this environment's own (not wrangler.toml's placeholder id),
 * and EDGE_KEKS, which opens the secrets the origin seals for the edge, of the form the origin
 * seals with. Without the binding the Worker serves its variables only (a deployment may).
 * @module
 */
import type { WranglerConfig } from '../local/wrangler-config'
import { EDGE_KEKS } from '../worker/connections/settings'
import { error, type Finding, ok, putSecret, warn } from './deploy-finding'

const BINDING = 'CONNECTIONS'
/** wrangler.toml's id until someone creates the namespace. */
export const PLACEHOLDER_KV_ID = '0'.repeat(32)
const KEK_ENTRY = /^[A-Za-z0-9_-]{1,32}:[A-Za-z0-9+/_-]{43}=?$/

export function checkConnections(
  config: WranglerConfig,
  secrets: Record<string, string>,
  envName: string | undefined,
): Finding[] {
  const namespace = config.kvNamespaces.find((n) => n.binding === BINDING)
  const section = envName ? `[[env.${envName}.kv_namespaces]]` : '[[kv_namespaces]]'
  if (!namespace) {
    return [
      warn(
        `no ${BINDING} KV namespace: the registry's connections never reach this Worker (its variables serve alone)`,
        `declare ${section} with binding = "${BINDING}" and this environment's namespace id`,
      ),
    ]
  }
  const findings: Finding[] = []
  if (namespace.id === PLACEHOLDER_KV_ID) {
    findings.push(
      error(
        `the ${BINDING} KV namespace id is wrangler.toml's placeholder`,
        `npx wrangler kv namespace create inbound-dedup-connections${envName ? `-${envName}` : ''}, and its id into ${section}`,
      ),
    )
  }
  const keks = (secrets[EDGE_KEKS.name] ?? '').split(',').map((entry) => entry.trim())
  if (keks.join('') === '') {
    findings.push(
      warn(
        `${EDGE_KEKS.name} is not set: a connection of the registry cannot be opened (its requests get the retry answer)`,
        `${putSecret(EDGE_KEKS.name, envName)}, the origin's ${EDGE_KEKS.name} value`,
      ),
    )
  } else if (!keks.every((entry) => KEK_ENTRY.test(entry))) {
    findings.push(
      error(
        `${EDGE_KEKS.name} is not id:<32 bytes base64>[,older:…]`,
        `${putSecret(EDGE_KEKS.name, envName)}, the origin's ${EDGE_KEKS.name} value`,
      ),
    )
  }
  if (findings.length === 0)
    findings.push(ok(`the ${BINDING} namespace and ${EDGE_KEKS.name} are set`))
  return findings
}
