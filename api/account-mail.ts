// Mail to people about their account (password resets, invitations), through the same SMTP sender as the
// email tool (services/adapters.ts MailSender). Without SMTP nothing is sent, and the caller offers another way (the
// operator CLI, the link shown).
import type { MailSender } from '../services/adapters';

export interface SmtpSettings {
  url?: string;
  from: string;
}

/** Sends one message; false when no SMTP server is configured. */
export async function sendAccountMail(
  deps: { smtp?: SmtpSettings; adapters: { mail: MailSender } },
  message: { to: string; subject: string; text: string; key: string },
): Promise<boolean> {
  const { smtp } = deps;
  if (!smtp?.url) return false;
  await deps.adapters.mail({ url: smtp.url, from: smtp.from }, message);
  return true;
}
