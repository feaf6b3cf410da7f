// Webhook signatures in the Standard Webhooks scheme (standardwebhooks.com), which many senders already
// speak: HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<raw body>", keyed by the base64 part of a
// "whsec_…" secret, sent as "webhook-signature: v1,<base64>". The id doubles as the delivery id that makes a
// redelivery start no second run; the timestamp bounds replays to a window.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export const replayWindowSeconds = 5 * 60;

export function newWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

export function signWebhook(secret: string, id: string, timestamp: number, body: string | Buffer): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
  return `v1,${mac}`;
}

export type SignatureCheck =
  | { ok: true; id: string }
  | { ok: false; code: 'signature_missing' | 'signature_invalid' | 'timestamp_stale'; message: string };

export function verifyWebhook(
  secret: string,
  headers: { id?: string; timestamp?: string; signature?: string },
  body: Buffer,
  now = Date.now(),
): SignatureCheck {
  const { id, timestamp, signature } = headers;
  if (!id || !timestamp || !signature) {
    return {
      ok: false,
      code: 'signature_missing',
      message: 'send the webhook-id, webhook-timestamp and webhook-signature headers (Standard Webhooks)',
    };
  }
  const t = Number(timestamp);
  if (!/^\d+$/.test(timestamp) || Math.abs(now / 1000 - t) > replayWindowSeconds) {
    return {
      ok: false,
      code: 'timestamp_stale',
      message: `webhook-timestamp must be the Unix time in seconds, within ${replayWindowSeconds / 60} minutes of now`,
    };
  }
  const expected = Buffer.from(signWebhook(secret, id, t, body));
  // The header may carry several space-separated signatures (during a secret rotation); one match suffices.
  const match = signature.split(' ').some((candidate) => {
    const given = Buffer.from(candidate);
    return given.length === expected.length && timingSafeEqual(given, expected);
  });
  return match
    ? { ok: true, id }
    : { ok: false, code: 'signature_invalid', message: "the webhook signature does not match this trigger's secret" };
}
