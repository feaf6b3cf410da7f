// A test of a version on past items: each item beside the run it came from, with the summary.
import { runControlApi } from '$lib/server/run-control-api';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params }) => runControlApi.testRun(params.id, params.runId);
