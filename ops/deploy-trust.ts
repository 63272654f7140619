/**
 * Settings that make the Worker trust what an attacker can supply (`npm run doctor`): each is an
 * error in a deployed environment, with its reason, and a warning at the local top level, where
 * the development stack uses them on purpose (`.dev.vars.example` points Teams at a local key
 * server).
 * - `TEAMS_OPENID_METADATA_URL` over plain HTTP, or on a host that is not Microsoft's: whoever
 *   serves (or rewrites) those keys signs Teams tokens the Worker accepts for every bot.
 * @module
 */
import { BOT_FRAMEWORK_METADATA_URL } from '../worker/channels/teams'
import { error, type Finding, warn } from './deploy-finding'

/** The Worker's variables and secrets, by name, as they will be deployed. */
type Vars = Record<string, string | undefined>

const METADATA_URL = 'TEAMS_OPENID_METADATA_URL'
/**
 * The hosts of Microsoft's Bot Framework OpenID metadata: the public cloud's and the US
 * Government cloud's (microsoft/botbuilder-dotnet,
 * libraries/Microsoft.Bot.Connector/Authentication/GovernmentAuthenticationConstants.cs,
 * `ToBotFromChannelOpenIdMetadataUrl`).
 */
export const MICROSOFT_METADATA_HOSTS: readonly string[] = [
  new URL(BOT_FRAMEWORK_METADATA_URL).hostname,
  'login.botframework.azure.us',
]

export function checkTrust(env: Vars, envName: string | undefined): Finding[] {
  const level = envName ? error : warn
  return checkTeamsMetadata(env, level)
}

type Level = typeof error

function checkTeamsMetadata(env: Vars, level: Level): Finding[] {
  const value = env[METADATA_URL]?.trim()
  if (!value) return []
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return [] // the channel's own parser reports it (checkChannels)
  }
  const fix = `unset ${METADATA_URL} (the default is Microsoft's, ${BOT_FRAMEWORK_METADATA_URL})`
  const findings: Finding[] = []
  if (url.protocol !== 'https:') {
    findings.push(
      level(
        `${METADATA_URL} is plain HTTP: anyone on the path can swap the signing keys and forge a Teams message for any bot`,
        fix,
      ),
    )
  }
  if (!MICROSOFT_METADATA_HOSTS.includes(url.hostname)) {
    findings.push(
      level(
        `${METADATA_URL} names ${url.hostname}, not Microsoft's Bot Framework: whoever holds that host's keys signs Teams tokens the Worker accepts`,
        fix,
      ),
    )
  }
  return findings
}
