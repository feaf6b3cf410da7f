// Secrets Cadre must read back (webhook signing secrets, two-factor secrets, SSO client secrets) are stored
// encrypted (envelope encryption with AES-256-GCM under the service's key), so a database dump alone reveals none.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { CadreConfig } from '../cadre.config';

export interface SecretBox {
  seal(plain: string): string;
  open(sealed: string): string;
}

/**
 * The key from CADRE_SECRET_KEY, else one generated at first use and kept (mode 0600) in the data dir; keys in
 * CADRE_SECRET_KEY_PREVIOUS still open what they sealed (after a rotation, until `npx cadre secrets rewrap`).
 */
export function loadSecretBox(config: Pick<CadreConfig, 'secretKey' | 'previousSecretKeys' | 'dataDir'>) {
  return secretBox(
    config.secretKey ?? secretFromFile(path.join(config.dataDir, 'secret.key')),
    config.previousSecretKeys,
  );
}

/** A random secret kept in `file` (mode 0600): made at first use, by whichever process comes first. */
export function secretFromFile(file: string): string {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  fs.mkdirSync(path.dirname(file), { recursive: true });
  try {
    fs.writeFileSync(file, randomBytes(32).toString('base64'), { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err; // another process wrote it first
  }
  return fs.readFileSync(file, 'utf8').trim();
}

const b64 = (b: Buffer) => b.toString('base64url');
const unb64 = (s: string) => Buffer.from(s, 'base64url');

function gcmSeal(key: Buffer, plain: Buffer): string[] {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const body = Buffer.concat([cipher.update(plain), cipher.final()]);
  return [b64(iv), b64(cipher.getAuthTag()), b64(body)];
}

function gcmOpen(key: Buffer, [iv, tag, body]: string[]): Buffer {
  const decipher = createDecipheriv('aes-256-gcm', key, unb64(iv));
  decipher.setAuthTag(unb64(tag));
  return Buffer.concat([decipher.update(unb64(body)), decipher.final()]);
}

interface KeyEncryptionKey {
  id: string;
  key: Buffer;
}

// Any passphrase works; hashing gives the cipher its 32 bytes. The id names the key without revealing it.
const kek = (keyText: string): KeyEncryptionKey => ({
  id: createHash('sha256').update(`cadre key id:${keyText}`).digest('hex').slice(0, 8),
  key: createHash('sha256').update(keyText).digest(),
});

/**
 * Envelope encryption: every secret gets its own random data key (AES-256-GCM); the data key is stored wrapped
 * by the service key (the key-encryption key, also AES-256-GCM) and named by that key's id. Rotating the service
 * key re-wraps data keys (`rewrap`) without ever decrypting the secrets themselves into storage again; keys given
 * as `previous` still open what they wrapped until then.
 */
export function secretBox(keyText: string, previous: string[] = []): SecretBox & { rewrap(sealed: string): string } {
  const current = kek(keyText);
  const known = new Map([current, ...previous.map(kek)].map((k) => [k.id, k]));

  const dataKeyOf = (sealed: string): { kekId: string; dataKey: Buffer; body: string[] } => {
    const parts = sealed.split('.');
    if (parts[0] !== 'v2' || parts.length !== 8) throw new Error('unknown secret format');
    const wrappedBy = known.get(parts[1]);
    if (!wrappedBy) throw new Error(`this secret was sealed with another service key (id ${parts[1]})`);
    return { kekId: parts[1], dataKey: gcmOpen(wrappedBy.key, parts.slice(2, 5)), body: parts.slice(5) };
  };

  const seal = (plain: string) => {
    const dataKey = randomBytes(32);
    return ['v2', current.id, ...gcmSeal(current.key, dataKey), ...gcmSeal(dataKey, Buffer.from(plain, 'utf8'))].join(
      '.',
    );
  };
  const open = (sealed: string) => {
    if (sealed.startsWith('v1.')) return openV1(sealed, [...known.values()]);
    const { dataKey, body } = dataKeyOf(sealed);
    return gcmOpen(dataKey, body).toString('utf8');
  };
  const rewrap = (sealed: string) => {
    if (sealed.startsWith('v1.')) return seal(open(sealed));
    const { kekId, dataKey, body } = dataKeyOf(sealed);
    if (kekId === current.id) return sealed;
    return ['v2', current.id, ...gcmSeal(current.key, dataKey), ...body].join('.');
  };
  return { seal, open, rewrap };
}

/** Secrets sealed before envelope encryption (v1: the service key encrypted them directly). */
function openV1(sealed: string, keys: KeyEncryptionKey[]): string {
  const [, iv, tag, body] = sealed.split('.');
  for (const { key } of keys) {
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
    } catch {
      // not this key: try the next
    }
  }
  throw new Error('this secret was sealed with another service key');
}

/** Every column that holds sealed secrets, for re-wrapping after a key rotation. */
export const sealedColumns = [
  { table: 'triggers', key: 'id', column: 'secret_encrypted' },
  { table: 'users', key: 'id', column: 'totp_secret' },
  { table: 'users', key: 'id', column: 'totp_pending' },
  { table: 'workspace_sso', key: 'workspace_id', column: 'client_secret' },
  { table: 'sso_logins', key: 'state_hash', column: 'code_verifier' },
  { table: 'source_documents', key: 'id', column: 'auth_header_sealed' },
  { table: 'connections', key: 'id', column: 'credentials_sealed' },
] as const;
