import assert from 'node:assert/strict';
import { verifyWebhook } from '../../services/triggers/webhook-signature';
import { secretBox } from '../../db/secret-box';
import { formConfigSchema, triggerInputSchema, validateSubmission } from '../../model/trigger';

describe('trigger model', () => {
  it('checks a form submission field by field and types the values', () => {
    const { fields } = formConfigSchema.parse({
      title: 'Order',
      fields: [
        { name: 'qty', label: 'Quantity', type: 'number', required: true },
        { name: 'gift', label: 'Gift wrap', type: 'checkbox' },
        { name: 'day', label: 'Delivery day', type: 'date' },
      ],
    });
    assert.deepEqual(validateSubmission(fields, { qty: '3', gift: 'on', day: '2027-02-01' }), {
      data: { qty: 3, gift: true, day: '2027-02-01' },
      errors: [],
    });
    const { errors } = validateSubmission(fields, { qty: 'many', day: '1 Feb', extra: 1 });
    assert.deepEqual(
      errors.map((e) => e.field),
      ['qty', 'day', 'extra'],
    );
  });

  it('refuses a select without options and duplicate field names', () => {
    const select = formConfigSchema.safeParse({ title: 't', fields: [{ name: 'a', label: 'A', type: 'select' }] });
    assert.equal(select.success, false);
    const dup = formConfigSchema.safeParse({
      title: 't',
      fields: [
        { name: 'a', label: 'A' },
        { name: 'a', label: 'B' },
      ],
    });
    assert.equal(dup.success, false);
  });

  it('needs a known kind', () => {
    assert.equal(triggerInputSchema.safeParse({ kind: 'email' }).success, false);
  });
});

describe('webhook signatures', () => {
  const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
  // The example of the Standard Webhooks specification (github.com/standard-webhooks/standard-webhooks).
  const id = 'msg_p5jXN8AQM9LWM0D4loKWxJek';
  const timestamp = '1614265330';
  const body = Buffer.from('{"test": 2432232314}');
  const signature = 'v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=';
  const at = 1614265330 * 1000;

  it('accepts the specification example, also among several signatures', () => {
    assert.deepEqual(verifyWebhook(secret, { id, timestamp, signature }, body, at), { ok: true, id });
    assert.equal(verifyWebhook(secret, { id, timestamp, signature: `v1,bm9wZQ== ${signature}` }, body, at).ok, true);
  });

  it('refuses a changed body, another id, a stale timestamp and missing headers', () => {
    const check = (h: Parameters<typeof verifyWebhook>[1], b = body, now = at) => {
      const r = verifyWebhook(secret, h, b, now);
      return r.ok ? 'ok' : r.code;
    };
    assert.equal(check({ id, timestamp, signature }, Buffer.from('{"test": 1}')), 'signature_invalid');
    assert.equal(check({ id: 'msg_other', timestamp, signature }), 'signature_invalid');
    assert.equal(check({ id, timestamp, signature }, body, at + 10 * 60_000), 'timestamp_stale');
    assert.equal(check({ id, timestamp: 'yesterday', signature }), 'timestamp_stale');
    assert.equal(check({ id, timestamp }), 'signature_missing');
  });
});

describe('secret box', () => {
  it('round-trips, never stores the plain text, and refuses another key', () => {
    const box = secretBox('key one');
    const sealed = box.seal('whsec_abc');
    assert.ok(!sealed.includes('whsec_abc'));
    assert.notEqual(box.seal('whsec_abc'), sealed, 'a fresh nonce each time');
    assert.equal(box.open(sealed), 'whsec_abc');
    assert.throws(() => secretBox('key two').open(sealed));
  });

  it('wraps a data key per secret; a rotated key still opens old secrets and re-wraps them without new data keys', () => {
    const old = secretBox('key one');
    const sealed = old.seal('totp secret');
    const parts = sealed.split('.');
    assert.equal(parts[0], 'v2');
    const rotated = secretBox('key two', ['key one']);
    assert.equal(rotated.open(sealed), 'totp secret', 'the previous key opens what it wrapped');
    const rewrapped = rotated.rewrap(sealed);
    assert.notEqual(rewrapped.split('.')[1], parts[1], 'wrapped by the new key');
    assert.deepEqual(rewrapped.split('.').slice(5), parts.slice(5), 'the secret itself is not re-encrypted');
    assert.equal(secretBox('key two').open(rewrapped), 'totp secret', 'the old key is no longer needed');
    assert.throws(() => old.open(rewrapped), /another service key/);
    assert.equal(rotated.rewrap(rewrapped), rewrapped, 'already current: unchanged');
  });
});
