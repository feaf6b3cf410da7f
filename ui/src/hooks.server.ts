import { text, type Handle } from '@sveltejs/kit';

// Cross-site form posts are refused here instead of by SvelteKit's built-in check (turned off in svelte.config.js):
// that one compares the Origin header with the origin adapter-node reconstructs, which is https://<host> unless
// ORIGIN is set, so it would refuse every post to a console served on plain http. What matters is only that the
// form was served by this host, whatever the scheme.
const FORM_TYPES = ['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'];

function isFormPost(request: Request): boolean {
  if (request.method === 'GET' || request.method === 'HEAD' || request.method === 'OPTIONS') return false;
  const type = request.headers.get('content-type')?.split(';', 1)[0].trim().toLowerCase() ?? '';
  return FORM_TYPES.includes(type);
}

function hostOf(origin: string): string | null {
  try {
    return new URL(origin).host;
  } catch {
    return null;
  }
}

export const handle: Handle = async ({ event, resolve }) => {
  if (isFormPost(event.request)) {
    const origin = event.request.headers.get('origin');
    const forwardedHost = event.request.headers.get('x-forwarded-host')?.split(',', 1)[0].trim();
    const allowed = new Set([event.url.host, forwardedHost].filter(Boolean));
    const host = origin ? hostOf(origin) : null;
    if (!host || !allowed.has(host)) {
      return text(`Cross-site ${event.request.method} form submissions are forbidden`, { status: 403 });
    }
  }
  return resolve(event);
};
