// The token a connector acts with (Slack's bot, HubSpot's app): the access token of the OAuth 2.0 account its
// settings name, or the token given in its credentials. Exactly one of them, so which one acts is never a guess.
import { ApplicationFailure } from '@temporalio/common';
import type { OpenedConnection } from './connector';

export interface TokenWords {
  /** What the given token is called: "a bot token", "an access token". */
  token: string;
  /** What to do when there is none: "give the bot token (xoxb-…) or name an OAuth 2.0 account". */
  remedy: string;
  /** The failure's type: "SlackSettings". */
  type: string;
}

export async function actingToken(
  c: Pick<OpenedConnection, 'name' | 'accountToken'> & { config: { account?: string } },
  given: string | undefined,
  words: TokenWords,
): Promise<string> {
  const refused = (message: string) => ApplicationFailure.nonRetryable(message, words.type);
  const { account } = c.config;
  if (account && given)
    throw refused(
      `connection "${c.name}" names the account "${account}" and also gives ${words.token}: keep one of them`,
    );
  if (account) {
    if (!c.accountToken) throw refused(`the account "${account}" of connection "${c.name}" is not at hand`);
    return c.accountToken();
  }
  if (given) return given;
  throw refused(`connection "${c.name}" has neither ${words.token} nor an account: ${words.remedy}`);
}
