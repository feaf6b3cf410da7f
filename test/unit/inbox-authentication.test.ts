// Cadre's SPF/DKIM/DMARC verdict on a received message (services/inbox/authentication.ts): the words it records from
// mailauth's answer, and a verification that never waits long on DNS and never throws. Real mailauth, against DNS
// records the test serves: nothing is asked of the network.
import assert from 'node:assert/strict';
import { createTransport } from 'nodemailer';
import { verdictOf, verifyMessage, type DnsResolver } from '../../services/inbox/authentication';
import { dkimKey, fakeDns } from '../support/dns';

type Answer = Parameters<typeof verdictOf>[0];
const status = (result: string, comment?: string) => ({ status: { result, comment } });
const answer = (parts: { spf?: string; dkim?: ReturnType<typeof status>[]; dmarc?: string; headers?: string }) =>
  ({
    spf: parts.spf ? status(parts.spf) : false,
    dkim: { results: parts.dkim ?? [] },
    dmarc: parts.dmarc ? status(parts.dmarc) : false,
    headers: parts.headers ?? '',
  }) as unknown as Answer;

describe('Inbox: the SPF/DKIM/DMARC verdict', () => {
  it('takes the words of each method, spelling out temperr and calling anything unknown none', () => {
    const v = verdictOf(answer({ spf: 'softfail', dkim: [status('temperr')], dmarc: 'skipped' }));
    assert.deepEqual([v.spf, v.dkim, v.dmarc], ['softfail', 'temperror', 'none']);
    const missing = verdictOf(answer({}));
    assert.deepEqual(
      [missing.spf, missing.dkim, missing.dmarc, missing.authentication_results],
      ['none', 'none', 'none', null],
    );
  });

  it('passes DKIM when any signature passes, else fails it when any fails, else takes the first', () => {
    const dkim = (...results: ReturnType<typeof status>[]) => verdictOf(answer({ dkim: results })).dkim;
    assert.equal(dkim(status('fail', 'bad signature'), status('pass')), 'pass');
    assert.equal(dkim(status('neutral', 'no key'), status('fail', 'bad signature')), 'fail');
    assert.equal(dkim(status('neutral', 'no key'), status('temperror')), 'neutral');
    assert.equal(dkim(status('none', 'message not signed')), 'none');
  });

  it('calls a body that changed after signing a DKIM fail (RFC 6376 §6.1.3), in the word and in the header', () => {
    const v = verdictOf(
      answer({
        spf: 'pass',
        dkim: [status('neutral', 'body hash did not verify')],
        dmarc: 'pass',
        headers:
          'Received-SPF: pass (mx: ok) client-ip=127.0.0.1;\r\n' +
          'Authentication-Results: mx.example;\r\n dkim=neutral (body hash did not verify) header.i=@a.example;\r\n' +
          ' spf=pass smtp.mailfrom=x@a.example\r\n smtp.helo=a.example;\r\n dmarc=pass header.from=a.example\r\n',
      }),
    );
    assert.equal(v.dkim, 'fail');
    assert.equal(
      v.authentication_results,
      'mx.example; dkim=fail (body hash did not verify) header.i=@a.example; spf=pass smtp.mailfrom=x@a.example ' +
        'smtp.helo=a.example; dmarc=pass header.from=a.example',
    );
  });

  describe('verifying a message', () => {
    const key = dkimKey();
    let signed: Buffer;
    before(async () => {
      const info = await createTransport({
        streamTransport: true,
        buffer: true,
        dkim: { domainName: 'a.example.org', keySelector: 's1', privateKey: key.privateKey },
      }).sendMail({ from: 'ann@a.example.org', to: 'desk@inbox.test', subject: 'hi', text: 'hello' });
      signed = info.message as Buffer;
    });
    const options = { ip: '127.0.0.1', helo: 'mail.a.example.org', sender: 'ann@a.example.org', mta: 'inbox.test' };

    it('passes what the served records allow', async () => {
      const dns = fakeDns();
      dns.txt('a.example.org', 'v=spf1 ip4:127.0.0.1 -all');
      dns.txt('s1._domainkey.a.example.org', key.record);
      dns.txt('_dmarc.a.example.org', 'v=DMARC1; p=none');
      const v = await verifyMessage(signed, { ...options, resolver: dns.resolver });
      assert.deepEqual([v.spf, v.dkim, v.dmarc], ['pass', 'pass', 'pass']);
      assert.match(v.authentication_results ?? '', /^inbox\.test; dkim=pass .*; spf=pass .*; dmarc=pass /);
    });

    it('records temperror, and does not throw, when DNS does not answer', async () => {
      const silent: DnsResolver = () => new Promise(() => {});
      const errors: unknown[] = [];
      // Each lookup gives up: mailauth reads that as a temporary DNS error.
      const perLookup = await verifyMessage(signed, { ...options, resolver: silent, lookupTimeoutMs: 20 }, (e) =>
        errors.push(e),
      );
      assert.deepEqual([perLookup.spf, perLookup.dkim, perLookup.dmarc], ['temperror', 'temperror', 'temperror']);
      assert.match(perLookup.authentication_results ?? '', /spf=temperror/);
      // The whole verification gives up.
      const whole = await verifyMessage(
        signed,
        { ...options, resolver: silent, lookupTimeoutMs: 60_000, timeoutMs: 20 },
        (e) => errors.push(e),
      );
      assert.deepEqual(whole, {
        spf: 'temperror',
        dkim: 'temperror',
        dmarc: 'temperror',
        authentication_results: null,
      });
      assert.equal(errors.length, 1);
      assert.match(String(errors[0]), /took too long/);
    });

    it('records temperror when the resolver breaks', async () => {
      const broken: DnsResolver = async () => {
        throw Object.assign(new Error('connection refused'), { code: 'ECONNREFUSED' });
      };
      const v = await verifyMessage(signed, { ...options, resolver: broken });
      assert.equal(v.dkim, 'temperror');
      assert.equal(v.dmarc, 'temperror');
      assert.ok(['temperror', 'permerror'].includes(v.spf), v.spf);
    });
  });
});
