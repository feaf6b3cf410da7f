// The two cookies of a console session: the HttpOnly session token, and the CSRF token the page echoes back in
// a header (readable by the page, useless to another site, which cannot read it).
import type { Response } from 'express';
import { sessionDays } from '../db/accounts';
import { csrfCookie, sessionCookie } from './auth';

export function setSessionCookies(res: Response, s: { token: string; csrf: string }, publicUrl: string): void {
  const common = {
    sameSite: 'lax' as const,
    secure: publicUrl.startsWith('https:'),
    path: '/',
    maxAge: sessionDays * 86_400_000,
  };
  res.cookie(sessionCookie, s.token, { ...common, httpOnly: true });
  res.cookie(csrfCookie, s.csrf, common);
}

export function clearSessionCookies(res: Response): void {
  res.clearCookie(sessionCookie, { path: '/' });
  res.clearCookie(csrfCookie, { path: '/' });
}
