// Bearer tokens handed to people (sessions, invitations, password resets, Run Mode links): 256 random bits,
// shown once, stored only as their SHA-256. With that much randomness a fast hash is safe and lookups are by hash.
import { createHash, randomBytes } from 'node:crypto';

export const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');

export function newToken(): { token: string; hash: string } {
  const token = randomBytes(32).toString('base64url');
  return { token, hash: tokenHash(token) };
}
