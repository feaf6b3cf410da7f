// Operator Mode changes the agent: a role that may not (viewer, operator) is not shown the editor only to have
// Save refused; it is told so at once, with the way back to the agent.
import { error } from '@sveltejs/kit';
import type { LayoutServerLoad } from './$types';

export const load: LayoutServerLoad = async ({ parent }) => {
  const { can, me } = await parent();
  if (!can.manage) {
    error(
      403,
      `Your role (${me?.workspace?.role ?? 'this key'}) cannot change agents: ask an editor, an admin or the owner.`,
    );
  }
  return {};
};
