/**
 * Times Postgres stores. valibot's `isoTimestamp()` checks the form only: it takes
 * `2026-02-30T10:00:00Z`, the year `0000` and offsets up to ±23:59, which `timestamptz` refuses
 * (22008, "date/time field value out of range"; "time zone displacement out of range" past ±15:59),
 * the same way on every retry and replay. An event the edge accepted with one would be answered
 * 2xx or 202 and never stored. So a time the contract takes is also:
 * - a real calendar date (the month's days, leap years by the Gregorian rule, as Postgres counts);
 * - with an offset within ±15:59 (Postgres's bound);
 * - an instant from 0001-01-01 to 9999-12-31 in UTC: inside Postgres's range, and one whose UTC
 *   form (`toISOString()`, what the origin writes back out) is again a time of this form.
 * The text is kept as it came (its payload hash covers it): only refused or taken.
 * @module
 */

/** valibot's isoTimestamp form, its parts captured. */
const ISO_PARTS =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2})(?:\.\d{1,9})?(?:Z| ?([+-])(\d{2})(?::?(\d{2}))?)$/

/** Postgres's bound on a time zone displacement: hours past it are refused. */
const MAX_OFFSET_HOURS = 15
const MS_PER_MINUTE = 60_000

function daysInMonth(year: number, month: number): number {
  if (month === 2) {
    const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0
    return leap ? 29 : 28
  }
  return [4, 6, 9, 11].includes(month) ? 30 : 31
}

/** The UTC instant of a wall time and offset, in epoch ms (years below 100 included). */
function utcMs(parts: readonly number[], offsetMinutes: number): number {
  const [year = 0, month = 1, day = 1, hour = 0, minute = 0, second = 0] = parts
  const date = new Date(0)
  date.setUTCFullYear(year, month - 1, day)
  date.setUTCHours(hour, minute, second, 0)
  return date.getTime() - offsetMinutes * MS_PER_MINUTE
}

/** 0001-01-01T00:00:00Z and 10000-01-01T00:00:00Z, in epoch ms. */
const EARLIEST_MS = utcMs([1, 1, 1], 0)
const AFTER_LATEST_MS = utcMs([10_000, 1, 1], 0)

/** Whether Postgres's `timestamptz` takes this time, within the bounds of the module comment. */
export function isStorableTime(text: string): boolean {
  const match = ISO_PARTS.exec(text)
  if (!match) return false
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map(Number) as number[]
  const [sign, offsetHours = '0', offsetMinutes = '0'] = match.slice(7)
  if (year === undefined || month === undefined || day === undefined) return false
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return false
  if ((hour ?? 0) > 23 || (minute ?? 0) > 59 || (second ?? 0) > 59) return false
  if (Number(offsetHours) > MAX_OFFSET_HOURS || Number(offsetMinutes) > 59) return false
  const offset = (sign === '-' ? -1 : 1) * (Number(offsetHours) * 60 + Number(offsetMinutes))
  const instant = utcMs([year, month, day, hour ?? 0, minute ?? 0, second ?? 0], offset)
  // A fraction rounds up to at most the next second: the bound leaves that second out.
  return instant >= EARLIEST_MS && instant < AFTER_LATEST_MS - 1000
}
