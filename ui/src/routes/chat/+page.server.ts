import { redirect } from '@sveltejs/kit';
import { chatApi } from '$lib/server/chat-api';
import type { Actions, PageServerLoad } from './$types';

// Chat Mode: the person's conversations; a new one starts here (from the agent page too, with that agent in focus).
export const load: PageServerLoad = async () => {
  const list = await chatApi.list();
  return { conversations: list.data, model: list.model };
};

export const actions: Actions = {
  new: async ({ request }) => {
    const agentId = String((await request.formData()).get('agent_id') ?? '') || undefined;
    // Without a model a conversation could never be answered: none is made, and Chat Mode says what to set.
    if (!(await chatApi.list()).model.configured) redirect(303, '/chat');
    const conversation = await chatApi.create(agentId);
    redirect(303, `/chat/${conversation.id}`);
  },
};
