// Mail to people about their account (password resets, invitations), through the same SMTP sender as the
// email tool. Without SMTP nothing is sent, and the caller offers another way (the operator CLI, the link shown).
import { externalToolHandlers } from '../activities/tools/handlers';

export interface SmtpSettings {
  url?: string;
  from: string;
}

/** Sends one message; false when no SMTP server is configured. */
export async function sendAccountMail(
  smtp: SmtpSettings | undefined,
  message: { to: string; subject: string; text: string; key: string },
): Promise<boolean> {
  if (!smtp?.url) return false;
  await externalToolHandlers['email.send']!(
    { to: message.to, subject: message.subject, text: message.text },
    { idempotencyKey: message.key, http: { allowHosts: [] }, smtp },
  );
  return true;
}
