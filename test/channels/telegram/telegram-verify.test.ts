import { describe, expect, it } from 'vitest'
import {
  partsOf,
  TEST_SECRETS,
  telegramRequest,
  telegramUpdate,
} from '../../../local/vendor-deliveries'
import { verifyTelegram } from '../../../worker/channels/telegram-verify'

const url = 'https://gateway.example/webhooks/telegram'

describe('Telegram secret token', () => {
  it('accepts the configured token', async () => {
    const parts = await partsOf(telegramRequest(url, telegramUpdate()))
    expect(await verifyTelegram(parts, [TEST_SECRETS.telegram])).toEqual({ ok: true })
  })

  it('rejects a request without the header', async () => {
    const parts = await partsOf(telegramRequest(url, telegramUpdate(), null))
    expect(await verifyTelegram(parts, [TEST_SECRETS.telegram])).toEqual({
      ok: false,
      reason: 'missing_headers',
    })
  })

  it.each(['wrong', `${TEST_SECRETS.telegram}x`, TEST_SECRETS.telegram.slice(0, -1)])(
    'rejects another token (%s)',
    async (offered) => {
      const parts = await partsOf(telegramRequest(url, telegramUpdate(), offered))
      expect(await verifyTelegram(parts, [TEST_SECRETS.telegram])).toEqual({
        ok: false,
        reason: 'secret_mismatch',
      })
    },
  )

  it('accepts the old token while a rotated list still holds it', async () => {
    const parts = await partsOf(telegramRequest(url, telegramUpdate(), 'old-token'))
    expect(await verifyTelegram(parts, ['new-token', 'old-token'])).toEqual({ ok: true })
    expect(await verifyTelegram(parts, ['new-token'])).toMatchObject({ ok: false })
  })
})
