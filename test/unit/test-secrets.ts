/** Secrets and ids the tests sign with (no imports: also read by vitest.workers.config.ts). */
export const TEST_SECRETS = {
  slack: 'test-slack-signing-secret',
  twilio: 'test-twilio-auth-token',
  telegram: 'test-telegram-secret-token',
  telegramBotId: '424242',
  origin: 'test-origin-shared-secret',
} as const
