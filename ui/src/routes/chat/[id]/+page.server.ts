import { chatApi } from '$lib/server/chat-api';
import type { PageServerLoad } from './$types';

export const load: PageServerLoad = async ({ params }) => {
  const [list, conversation] = await Promise.all([chatApi.list(), chatApi.get(params.id)]);
  return { conversations: list.data, conversation, model: list.model };
};
