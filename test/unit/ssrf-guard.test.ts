// assertPublicUrl: internal addresses are refused, public ones and allow-listed hosts pass. Only IP literals and
// "localhost" (resolved from /etc/hosts) are used, so no test depends on network DNS.
import assert from 'node:assert/strict';
import { assertPublicUrl, BlockedAddressError } from '../../activities/tools/ssrf-guard';

async function assertBlocked(url: string, allowHosts: string[] = [], message?: RegExp): Promise<void> {
  await assert.rejects(assertPublicUrl(new URL(url), allowHosts), (err: unknown) => {
    assert.ok(err instanceof BlockedAddressError, `expected BlockedAddressError for ${url}, got ${String(err)}`);
    if (message) assert.match(err.message, message);
    return true;
  });
}

describe('assertPublicUrl', () => {
  describe('blocks internal addresses', () => {
    for (const url of [
      'http://127.0.0.1/',
      'http://127.1.2.3:8080/x',
      'http://10.0.0.1/',
      'http://10.255.255.254/',
      'http://172.16.0.1/',
      'http://172.31.255.255/',
      'http://192.168.1.1/',
      'http://169.254.169.254/latest/meta-data/',
      'http://0.0.0.0/',
      'http://100.64.0.1/',
      'http://[::1]/',
      'http://[::]/',
      'http://[fd00::1]/',
      'http://[fe80::1]/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:10.0.0.1]/',
      'http://2130706433/', // 127.0.0.1 in decimal; URL normalises it
      'http://0x7f.1/', // 127.0.0.1 in hex shorthand
    ]) {
      it(url, async () => {
        await assertBlocked(url);
      });
    }

    it('names the host, the address and the allow-list variable in the message', async () => {
      await assertBlocked(
        'http://169.254.169.254/',
        [],
        /^169\.254\.169\.254 resolves to 169\.254\.169\.254, a private or internal address; add the host to CADRE_HTTP_ALLOW_HOSTS to allow it$/,
      );
    });

    it('blocks localhost after resolving it', async () => {
      await assertBlocked('http://localhost:3000/', [], /^localhost resolves to (127\.0\.0\.1|::1), a private/);
    });
  });

  it('rejects schemes other than http and https', async () => {
    await assertBlocked('ftp://93.184.216.34/file', [], /^only http and https URLs are allowed, not ftp:$/);
    await assertBlocked('file:///etc/passwd', [], /^only http and https URLs are allowed, not file:$/);
    await assertBlocked('gopher://93.184.216.34/', [], /not gopher:$/);
  });

  it('allows public IP literals without DNS', async () => {
    await assertPublicUrl(new URL('http://93.184.216.34/'), []);
    await assertPublicUrl(new URL('https://8.8.8.8:443/dns'), []);
    await assertPublicUrl(new URL('https://172.32.0.1/'), []); // just outside 172.16.0.0/12
    await assertPublicUrl(new URL('http://[2606:4700:4700::1111]/'), []);
  });

  it('allows an internal host that is in the allow list, by host name or host:port', async () => {
    await assertPublicUrl(new URL('http://127.0.0.1:8080/hook'), ['127.0.0.1']);
    await assertPublicUrl(new URL('http://10.0.0.5:9000/'), ['10.0.0.5:9000']);
    await assertPublicUrl(new URL('http://localhost/'), ['localhost']);
    await assertPublicUrl(new URL('http://[::1]:8080/'), ['::1']);
  });

  it('an allow-list entry does not cover other hosts or ports', async () => {
    await assertBlocked('http://10.0.0.6/', ['10.0.0.5']);
    await assertBlocked('http://10.0.0.5:9001/', ['10.0.0.5:9000']);
  });

  it('the allow list does not lift the scheme check', async () => {
    await assertBlocked('ftp://127.0.0.1/', ['127.0.0.1'], /^only http and https URLs are allowed, not ftp:$/);
  });
});
