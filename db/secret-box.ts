// Secrets Cadre must read back (webhook signing secrets) are stored encrypted with AES-256-GCM under the
// service's key, so a database dump alone reveals none of them.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { CadreConfig } from '../cadre.config';

export interface SecretBox {
  seal(plain: string): string;
  open(sealed: string): string;
}

/** The key from CADRE_SECRET_KEY, else one generated at first use and kept (mode 0600) in the data dir. */
export function loadSecretBox(config: Pick<CadreConfig, 'secretKey' | 'dataDir'>): SecretBox {
  return secretBox(config.secretKey ?? keyFromFile(path.join(config.dataDir, 'secret.key')));
}

function keyFromFile(file: string): string {
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

export function secretBox(keyText: string): SecretBox {
  // Any passphrase works; hashing gives the cipher its 32 bytes.
  const key = createHash('sha256').update(keyText).digest();
  return {
    seal(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), body.toString('base64')].join('.');
    },
    open(sealed) {
      const [version, iv, tag, body] = sealed.split('.');
      if (version !== 'v1') throw new Error('unknown secret format');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
      decipher.setAuthTag(Buffer.from(tag, 'base64'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64')), decipher.final()]).toString('utf8');
    },
  };
}
