import type { SubmitFunction } from '@sveltejs/kit';
import { invalidateAll } from '$app/navigation';

type Submitted = Parameters<Exclude<Awaited<ReturnType<SubmitFunction>>, void>>[0];

/**
 * After a form that decides an approval or a flagged item: as SvelteKit's default, and when the decision is refused
 * with 409 (another reviewer decided first, or the run ended) the page's data reloads too, so the page shows the
 * decision that counted beside the notice saying whose it was, instead of a form that can no longer be sent.
 * A 403 (an admin changed the person's role while the page was open) reloads it too, so the page drops the buttons
 * the new role may not use and the sidebar shows that role, instead of offering them again.
 */
export async function afterDecision({ result, update }: Submitted) {
  // Not reset: the decided card goes once the page's data reloads, and until then it keeps what was typed
  // (a reset would empty the edited fields and the chosen decision while the reload is under way).
  await update({ reset: false });
  if (result.type === 'failure' && (result.status === 409 || result.status === 403)) await invalidateAll();
}

/** `use:enhance={reloadOnConflict}` on a decision form. */
export const reloadOnConflict: SubmitFunction = () => afterDecision;
