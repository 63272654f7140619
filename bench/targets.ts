/**
 * A target the bench judges (met, not met, not measured) and how the report lists them.
 * @module
 */

export interface Target {
  name: string
  met: boolean | null
  detail: string
}

export const notMeasured = (name: string): Target => ({ name, met: null, detail: 'not measured' })

function verdict(met: boolean | null): string {
  return met === null ? 'not measured' : met ? 'met' : 'NOT met'
}

export function targetsList(targets: readonly Target[]): string {
  return targets.map((t) => `- **${verdict(t.met)}**: ${t.name}: ${t.detail}`).join('\n')
}
