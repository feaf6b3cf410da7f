// Signing in and out through the API's account routes. The API answers with the session and CSRF cookies; the
// console hands them to the browser with the attributes the API chose (HttpOnly, SameSite, Secure on https).
import { error } from '@sveltejs/kit';
import { getRequestEvent } from '$app/server';
import { apiBase, unpack } from './api';

function passCookies(headers: Headers) {
  const { cookies } = getRequestEvent();
  for (const line of headers.getSetCookie()) {
    const [pair, ...attrs] = line.split(';').map((s) => s.trim());
    const eq = pair.indexOf('=');
    const name = pair.slice(0, eq);
    const value = decodeURIComponent(pair.slice(eq + 1));
    const attr = (key: string) => attrs.find((a) => a.toLowerCase().startsWith(key));
    const maxAge = attr('max-age=');
    if (!value || attr('expires=thu, 01 jan 1970')) {
      cookies.delete(name, { path: '/' });
      continue;
    }
    cookies.set(name, value, {
      path: '/',
      httpOnly: attr('httponly') !== undefined,
      secure: attr('secure') !== undefined,
      sameSite: 'lax',
      ...(maxAge ? { maxAge: Number(maxAge.split('=')[1]) } : {}),
    });
  }
}

/**
 * The typed client's `fetch` for the account routes (`client.POST('/auth/login', { body, fetch: accountFetch })`):
 * as the person at the browser, with their session when they have one, and the cookies the API sets handed on to
 * them. A refusal is the page's to show (wrong password, taken email…), so it comes back as the answer's `error`.
 */
export async function accountFetch(request: Request): Promise<Response> {
  const [path, init] = await unpack(request);
  const { cookies, request: incoming, getClientAddress } = getRequestEvent();
  const headers = new Headers(init.headers);
  headers.set('accept', 'application/json');
  const session = cookies.get('cadre_session');
  if (session) {
    headers.set('cookie', `cadre_session=${session}`);
    headers.set('x-csrf-token', cookies.get('cadre_csrf') ?? '');
  }
  // The API throttles and audits by client address; behind the console that is the browser's.
  headers.set('x-forwarded-for', getClientAddress());
  headers.set('user-agent', incoming.headers.get('user-agent') ?? 'cadre-console');
  let response: Response;
  try {
    response = await fetch(apiBase() + path, { ...init, headers });
  } catch {
    error(502, `The Cadre API at ${apiBase()} cannot be reached`);
  }
  passCookies(response.headers);
  return response;
}

/** Only paths on this console, so a crafted ?next= cannot send someone elsewhere after signing in. */
export function safeNext(next: string | null): string {
  return next && next.startsWith('/') && !next.startsWith('//') ? next : '/dashboard';
}
