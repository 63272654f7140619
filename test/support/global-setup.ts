import { assertServicesUp } from '../../local/services'

/** Runs once before any test file: stop at once, with a useful message, if a server is down. */
export default async function setup(): Promise<void> {
  await assertServicesUp()
}
