// Signing in and out through the API's account routes. The API answers with the session and CSRF cookies; the
// console hands them to the browser with the attributes the API chose (HttpOnly, SameSite, Secure on https).
import { env } from '$env/dynamic/private';
import { error } from '@sveltejs/kit';
import { getRequestEvent } from '$app/server';

export interface AccountAnswer {
  status: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each page reads the fields it shows
  body: any;
}

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

/** A call of an account route, as the person at the browser (with their session when they have one). */
export async function accountCall(
  path: string,
  init: { method?: string; json?: unknown } = {},
): Promise<AccountAnswer> {
  const base = env.CADRE_INTERNAL_API_URL;
  if (!base) error(500, 'CADRE_INTERNAL_API_URL is not set in the web process environment');
  const { cookies, request, getClientAddress } = getRequestEvent();
  const headers = new Headers({ accept: 'application/json' });
  const session = cookies.get('cadre_session');
  if (session) {
    headers.set('cookie', `cadre_session=${session}`);
    headers.set('x-csrf-token', cookies.get('cadre_csrf') ?? '');
  }
  if (init.json !== undefined) headers.set('content-type', 'application/json');
  // The API throttles and audits by client address; behind the console that is the browser's.
  headers.set('x-forwarded-for', getClientAddress());
  headers.set('user-agent', request.headers.get('user-agent') ?? 'cadre-console');
  let response: Response;
  try {
    response = await fetch(`${base.replace(/\/+$/, '')}/v1${path}`, {
      method: init.method ?? (init.json !== undefined ? 'POST' : 'GET'),
      headers,
      body: init.json !== undefined ? JSON.stringify(init.json) : undefined,
    });
  } catch {
    error(502, `The Cadre API at ${base} cannot be reached`);
  }
  passCookies(response.headers);
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

/** Only paths on this console, so a crafted ?next= cannot send someone elsewhere after signing in. */
export function safeNext(next: string | null): string {
  return next && next.startsWith('/') && !next.startsWith('//') ? next : '/dashboard';
}
