import type { TestAuth } from './auth.ts';
import { tokenFromMail } from './auth.ts';
import type { ReceivedMail } from './smtp.ts';

/** POST /v1/password/forgot. */
export function forgot(auth: TestAuth, email: string, ip = '198.51.100.20') {
  return auth.request('POST', '/v1/password/forgot', { body: { email, ip } });
}

/** POST /v1/password/reset. */
export function reset(auth: TestAuth, token: unknown, password: unknown) {
  return auth.request('POST', '/v1/password/reset', { body: { token, password } });
}

/** Every email of `kind` (by subject) sent to `email` so far, after the forgot work and the outbox have settled. */
export async function mailsTo(auth: TestAuth, email: string, subject: string): Promise<ReceivedMail[]> {
  await auth.service.deps.background.settled();
  await auth.service.mailWorker.drain();
  return auth.smtp.received.filter((m) => m.to.includes(email) && m.subject === subject);
}

export const RESET_SUBJECT = 'Reset your password';
export const CHANGED_SUBJECT = 'Your password was changed';

/** Asks for a reset and returns the token of the fresh email that arrives. */
export async function resetToken(auth: TestAuth, email: string, ip?: string): Promise<string> {
  const before = (await mailsTo(auth, email, RESET_SUBJECT)).length;
  const r = await forgot(auth, email, ip);
  if (r.status !== 200) throw new Error(`forgot failed: ${r.status} ${r.text}`);
  const mails = await mailsTo(auth, email, RESET_SUBJECT);
  if (mails.length !== before + 1) throw new Error(`expected a new reset email to ${email}, have ${mails.length - before}`);
  return tokenFromMail(mails.at(-1)!);
}

/** The "your password was changed" email to `email` (waits for it). */
export function changedMail(auth: TestAuth, email: string): Promise<ReceivedMail> {
  return auth.smtp.waitFor((m) => m.to.includes(email) && m.subject === CHANGED_SUBJECT);
}
