/**
 * A button press, the same on every channel: a row of its own in the person's conversation,
 * carrying what was pressed (docs/keys.md, "Button presses"). A press is the person answering in
 * the thread, as a typed reply would be, and several vendors show it there as their message
 * (WhatsApp's and Messenger's button replies), so it is never dropped, and never an empty row.
 * @module
 */
import { LIMITS } from '../../contract/event'

/** The longest button data written into a body (the label is what a person reads). */
const MAX_DATA_CHARS = 4_096

/**
 * The body of a press: the label the person saw when the vendor sends it, else the button's data
 * as sent (an object as JSON); then, each on a line of its own, what the person picked with it (a
 * date from a picker, a card's inputs). '' when there is nothing at all: no row, the caller keeps
 * it as unrecognized.
 */
export function pressBody(label: unknown, data: unknown, picked: readonly string[] = []): string {
  const first = text(label) || text(data).slice(0, MAX_DATA_CHARS)
  return [first, ...picked.filter((line) => line !== '')]
    .filter((line) => line !== '')
    .join('\n')
    .slice(0, LIMITS.body)
}

/** A value as the text a body holds: a string as it is, anything else but nothing as JSON. */
function text(value: unknown): string {
  if (typeof value === 'string') return value.trim()
  if (value === null || value === undefined) return ''
  if (typeof value === 'object' && Object.keys(value).length === 0) return ''
  return JSON.stringify(value)
}
