// An item's skill context (which skills, with versions, its model steps had), for the run page's item panel.
import { error, json } from '@sveltejs/kit';
import { skillsApi } from '$lib/server/skills-api';
import type { RequestHandler } from './$types';

export const GET: RequestHandler = async ({ params, url }) => {
  const item = url.searchParams.get('item') ?? '';
  if (!/^\d+$/.test(item)) error(400, 'item must be the sequence number of an item of the run');
  return json(await skillsApi.skillContext(params.id, Number(item)));
};
