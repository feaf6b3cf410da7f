import { isHttpError } from '@sveltejs/kit';
import { api } from '$lib/server/api';
import type { Me } from '$lib/api-types';
import type { LayoutServerLoad } from './$types';

const publicPrefixes = [
  '/forms',
  '/r',
  '/login',
  '/signup',
  '/invite',
  '/forgot-password',
  '/reset-password',
  '/logout',
];

/**
 * What the person's role lets them do, to show only the controls they can use (the API refuses the rest anyway).
 * A console working with its own key (no sign-in) shows everything; the key's scopes decide.
 */
function permissionsOf(me: Me | null) {
  const allowed = me?.workspace?.permissions ?? [];
  const can = (p: 'run' | 'manage' | 'admin') => (me ? allowed.includes(p) : true);
  return { run: can('run'), manage: can('manage'), admin: can('admin') };
}

/** The most open approvals the sidebar counts; beyond it shows "99+". */
const sidebarCountLimit = 99;

export const load: LayoutServerLoad = async ({ url }) => {
  // A load that reads nothing from the request would run once and be reused on every client-side navigation;
  // reading the URL makes it run again on each one, so `now` and the approvals count stay current.
  void url.href;
  // Public pages (a form trigger's form, Run Mode, signing in) show nothing of the workspace.
  if (publicPrefixes.some((p) => url.pathname === p || url.pathname.startsWith(`${p}/`)))
    return { now: Date.now(), pendingApprovals: null, publicPage: true, me: null, can: permissionsOf(null) };
  // The sidebar's pending-approvals count is a convenience: when the API cannot answer, the page's own load
  // reports the problem, so the count is left out instead of failing every page twice. Every page waits for this
  // load, so both calls go at once, and the count reads no more than the sidebar shows ("99+").
  const [me, pendingApprovals] = await Promise.all([
    api.me(),
    api.listOpenApprovals(sidebarCountLimit).then(
      (open) => ({
        count: Math.min(open.data.length, sidebarCountLimit),
        more: open.more || open.data.length > sidebarCountLimit,
      }),
      (e: unknown) => {
        if (!isHttpError(e)) throw e;
        return null;
      },
    ),
  ]);
  // Every relative time on the page is measured from this instant (see lib/components/Time.svelte).
  return { now: Date.now(), pendingApprovals, publicPage: false, me, can: permissionsOf(me) };
};
