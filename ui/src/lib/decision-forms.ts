import type { SubmitFunction } from '@sveltejs/kit';
import { invalidateAll } from '$app/navigation';

type Submitted = Parameters<Exclude<Awaited<ReturnType<SubmitFunction>>, void>>[0];

/**
 * After a form that decides an approval or a flagged item: as SvelteKit's default, and when the decision is refused
 * with 409 (another reviewer decided first, or the run ended) the page's data reloads too, so the page shows the
 * decision that counted beside the notice saying whose it was, instead of a form that can no longer be sent.
 */
export async function afterDecision({ result, update }: Submitted) {
  await update();
  if (result.type === 'failure' && result.status === 409) await invalidateAll();
}

/** `use:enhance={reloadOnConflict}` on a decision form. */
export const reloadOnConflict: SubmitFunction = () => afterDecision;
