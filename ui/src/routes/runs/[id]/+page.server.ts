import { isHttpError, redirect } from '@sveltejs/kit';
import { runControlApi } from '$lib/server/run-control-api';
import { attempt, decideApproval } from '$lib/server/actions';
import { api } from '$lib/server/api';
import type { ItemStatus } from '$lib/api-types';
import type { Actions, PageServerLoad } from './$types';

// The page reloads every 2 s while the run works, so large inputs are cut here rather than sent each time.
const INPUT_PREVIEW_CHARS = 4000;
const ITEM_FILTERS: ItemStatus[] = ['failed', 'needs_review', 'done', 'skipped', 'pending', 'running'];

/** Items and logs are secondary panels: when one cannot load, it says so and the rest of the run still shows. */
async function panel<T>(load: Promise<T>): Promise<{ value: T; error: null } | { value: null; error: string }> {
  try {
    return { value: await load, error: null };
  } catch (e) {
    if (isHttpError(e)) return { value: null, error: e.body.message };
    throw e;
  }
}

export const load: PageServerLoad = async ({ params, url }) => {
  const requested = url.searchParams.get('items');
  const itemStatus = ITEM_FILTERS.find((s) => s === requested);
  // The first 100 items come with the page; the rest load as they scroll into view (ItemsTable).
  const [run, items, logs, reviews] = await Promise.all([
    api.getRun(params.id),
    panel(api.listRunItems(params.id, { status: itemStatus, limit: 100 })),
    panel(api.listRunLogs(params.id, { limit: 200 })),
    // Flagged items are decided on the Review page: the run says how many wait there and links to them.
    panel(api.listReviews({ status: 'pending', run_id: params.id })),
  ]);

  const { input, ...rest } = run;
  const inputText = typeof input === 'string' ? input : (JSON.stringify(input, null, 2) ?? '');
  return {
    run: rest,
    input: {
      text: inputText.slice(0, INPUT_PREVIEW_CHARS),
      omitted: Math.max(0, inputText.length - INPUT_PREVIEW_CHARS),
    },
    itemStatus: itemStatus ?? null,
    items,
    logs,
    flagged: reviews.value?.data.length ?? 0,
  };
};

export const actions: Actions = {
  cancel: ({ params }) =>
    attempt(async () => {
      await api.cancelRun(params.id);
      return 'Cancelled. Items already done keep their results.';
    }),
  pause: ({ params }) =>
    attempt(async () => {
      await api.pauseRun(params.id);
      return 'Paused. Steps under way finish theirs; nothing new starts until you resume. Approvals can still be decided.';
    }),
  resume: ({ params }) =>
    attempt(async () => {
      await api.resumeRun(params.id);
      return 'Resumed where it stopped.';
    }),
  // A new run over the failed items; the page goes to it.
  retry: async ({ params }) => {
    let started: { id: string } | undefined;
    const outcome = await attempt(async () => {
      started = await runControlApi.retryFailed(params.id);
      return '';
    });
    if (started) redirect(303, `/runs/${started.id}`);
    return outcome;
  },
  decide: decideApproval,
};
