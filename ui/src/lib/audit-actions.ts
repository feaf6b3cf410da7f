// What each audit-log action means, in the words a member reads in Settings (the API keeps its own codes, which
// the page still shows on hover for whoever searches the log by them).
const WORDS: Record<string, string> = {
  'login.succeeded': 'Signed in',
  'login.failed': 'Sign-in failed',
  'sso.login': 'Signed in with single sign-on',
  'password.changed': 'Changed their password',
  'password.reset_requested': 'Asked to reset their password',
  'password.reset': 'Reset their password',
  'two_factor.enabled': 'Turned on two-factor',
  'two_factor.disabled': 'Turned off two-factor',
  'member.joined': 'Joined the workspace',
  'member.removed': 'Removed a member',
  'member.role_changed': 'Changed a member’s role',
  'invitation.created': 'Invited someone',
  'invitation.revoked': 'Withdrew an invitation',
  'api_key.created': 'Created an API key',
  'api_key.revoked': 'Revoked an API key',
  'api_key.rotated': 'Replaced an API key',
  'connection.created': 'Added a connection',
  'connection.updated': 'Changed a connection',
  'connection.authorized': 'Authorised a connection',
  'connection.removed': 'Removed a connection',
  'sso.configured': 'Set up single sign-on',
  'sso.removed': 'Removed single sign-on',
  'workspace.created': 'Created the workspace',
  'plan.change_requested': 'Asked to change the plan',
};

/** "api_key.created" → "Created an API key"; an action this list does not know yet reads as its words. */
export function auditAction(action: string): string {
  const known = WORDS[action];
  if (known) return known;
  const words = action.replace(/[._]/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}
