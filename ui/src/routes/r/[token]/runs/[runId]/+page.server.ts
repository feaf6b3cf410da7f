import { runModeApi } from '$lib/server/run-mode-api';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params }) => ({
  run: await runModeApi.run(params.token, params.runId),
  token: params.token,
});
