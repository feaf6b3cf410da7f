// An agent's Inbox: its address and its mail threads, newest activity first, with the runs their requests started.
import { api } from '$lib/server/api';
import { inboxApi } from '$lib/server/inbox-api';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params }) => {
  const [agent, inbox] = await Promise.all([api.getAgent(params.id), inboxApi.threads(params.id)]);
  return { agent, address: inbox.address, threads: inbox.data };
};
