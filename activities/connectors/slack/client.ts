// A Slack connection's WebClient (@slack/web-api) and its calls: the bot token or the account's access token, every
// request's address checked against the SSRF guard (the API's and the file upload URL Slack hands out), no retries of
// the client's own (it would send a chat.postMessage again after a 5xx), rate limits waited out within bounds, one
// refresh of an account's token that Slack refused, and Slack's error codes turned into messages a person can act on.
import { createHash } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { WebClient } from '@slack/web-api';
import type { slackConnector } from '../../../model/connectors/slack';
import { BlockedAddressError, publicFetch } from '../../tools/ssrf-guard';
import { clientCache, type OpenedConnection } from '../connector';
import { RateLimited, waitingOutRateLimits } from '../rate-limit';
import { actingToken } from '../acting-token';

export type SlackConnection = OpenedConnection<typeof slackConnector>;

const refused = (message: string, type: string) => ApplicationFailure.nonRetryable(message, type);

/** The token the bot acts with: exactly one of the account's and the one given. */
export const tokenOf = (c: SlackConnection) =>
  actingToken(c, c.credentials.bot_token, {
    token: 'a bot token',
    remedy: 'give the bot token (xoxb-…) or name an OAuth 2.0 account',
    type: 'SlackSettings',
  });

const clients = clientCache<WebClient>(() => undefined);

/** The SDK, loaded with the first client: a service that never calls Slack does not hold it. */
let sdk: typeof import('@slack/web-api') | undefined;

function clientOf(c: SlackConnection, token: string): Promise<WebClient> {
  const digest = createHash('sha256').update(token).digest('hex').slice(0, 16);
  return clients(`${c.version}:${digest}`, async () => {
    sdk ??= await import('@slack/web-api');
    const { LogLevel, WebClient } = sdk;
    return new WebClient(token, {
      slackApiUrl: c.config.api_url,
      // Retries are ours: the client's own would repeat a write after a 5xx or a lost answer.
      retryConfig: { retries: 0 },
      rejectRateLimitedCalls: true,
      fetch: publicFetch(c.limits.allowHosts),
      timeout: 30_000,
      logLevel: LogLevel.ERROR,
      allowAbsoluteUrls: false,
    });
  });
}

const authErrors = new Set(['not_authed', 'invalid_auth', 'account_inactive', 'token_revoked', 'token_expired']);
const passingErrors = new Set([
  'internal_error',
  'fatal_error',
  'service_unavailable',
  'request_timeout',
  'ratelimited',
]);

/** What to do about a Slack error code, for the errors a person meets. */
function hintOf(code: string, c: SlackConnection, data: Record<string, unknown>): string {
  switch (code) {
    case 'channel_not_found':
      return 'no such channel, or a private one the bot is not in: check the channel, or invite the bot to it';
    case 'not_in_channel':
      return 'the bot is not a member of the channel: invite it there (/invite @the-bot)';
    case 'is_archived':
      return 'the channel is archived';
    case 'missing_scope':
      return `the Slack app lacks the scope ${String(data.needed ?? '')}: add it to the app, reinstall it and reconnect "${c.name}"`;
    case 'message_not_found':
      return 'no message with that ts in the channel';
    case 'cant_update_message':
      return 'the bot can only change messages it posted';
    case 'msg_too_long':
      return 'the message is too long';
    case 'no_text':
      return 'give the message some text';
    case 'invalid_blocks':
    case 'invalid_blocks_format':
      return 'the blocks are not valid Block Kit';
    default:
      return 'Slack refused the call';
  }
}

/** A failure of a Slack call as a step's failure, saying what went wrong and what a person can do. */
function failureOf(c: SlackConnection, what: string, err: unknown): unknown {
  if (err instanceof ApplicationFailure || !sdk) return err; // without the SDK loaded, no Slack call was made
  const { WebAPIHTTPError, WebAPIPlatformError, WebAPIRequestError } = sdk;
  if (err instanceof WebAPIPlatformError) {
    const code = err.data.error;
    if (authErrors.has(code))
      return refused(
        `connection "${c.name}" was refused by Slack (${code}): ` +
          (c.config.account
            ? `reconnect the account "${c.config.account}" in Integrations`
            : 'give it a valid bot token in Integrations'),
        'SlackUnauthorized',
      );
    if (passingErrors.has(code))
      return ApplicationFailure.retryable(`${what}: Slack could not do it just now (${code})`, 'SlackUnavailable');
    return refused(
      `${what}: ${hintOf(code, c, err.data as unknown as Record<string, unknown>)} (${code})`,
      'SlackRefused',
    );
  }
  if (err instanceof WebAPIRequestError) {
    if (err.original instanceof BlockedAddressError)
      return refused(`connection "${c.name}": ${err.original.message}`, 'BlockedAddress');
    const reason = (err.original as { cause?: Error }).cause?.message ?? err.original.message;
    return ApplicationFailure.retryable(
      `${what}: Slack (${new URL(c.config.api_url).host}) did not answer: ${reason}`,
      'SlackUnreachable',
    );
  }
  if (err instanceof WebAPIHTTPError)
    return err.statusCode >= 500
      ? ApplicationFailure.retryable(`${what}: Slack answered HTTP ${err.statusCode}`, 'SlackUnavailable')
      : refused(`${what}: Slack answered HTTP ${err.statusCode} ${err.statusMessage}`, 'SlackRefused');
  return err;
}

/**
 * Runs `call` with the connection's client: rate limits waited out (bounded), an account's token that Slack refused
 * refreshed once. `call` must be safe to repeat, since a rate-limited or refused call did nothing.
 */
export async function slack<T>(c: SlackConnection, what: string, call: (client: WebClient) => Promise<T>): Promise<T> {
  let token = await tokenOf(c);
  let refreshed = false;
  for (;;) {
    try {
      return await waitingOutRateLimits(async () => {
        try {
          return await call(await clientOf(c, token));
        } catch (err) {
          if (sdk && err instanceof sdk.WebAPIRateLimitedError) throw new RateLimited('Slack', err.retryAfter);
          throw err;
        }
      }, what);
    } catch (err) {
      const code = sdk && err instanceof sdk.WebAPIPlatformError ? err.data.error : undefined;
      if (code && authErrors.has(code) && c.accountToken && !refreshed) {
        refreshed = true;
        token = await c.accountToken({ refresh: true, rejected: token });
        continue;
      }
      throw failureOf(c, what, err);
    }
  }
}

const channelId = /^[CGD][A-Z0-9]{2,}$/;
/** Channel ids by connection version and name, for ten minutes: conversations.list is one of Slack's slow tiers. */
const channelIds = new Map<string, { id: string; until: number }>();

/** The id of the channel a call names (an id, or a name looked up), or of the connection's default channel. */
export async function channelOf(c: SlackConnection, given: string | undefined): Promise<string> {
  const channel = given ?? c.config.default_channel;
  if (!channel)
    throw refused(
      `name a channel: the call gives none and connection "${c.name}" has no default channel`,
      'SlackSettings',
    );
  if (channelId.test(channel)) return channel;
  const name = channel.replace(/^#/, '');
  const known = channelIds.get(`${c.version}:${name}`);
  if (known && known.until > Date.now()) return known.id;
  let cursor: string | undefined;
  do {
    const page = await slack(c, `finding #${name}`, (client) =>
      client.conversations.list({
        types: 'public_channel,private_channel',
        exclude_archived: true,
        limit: 200,
        cursor,
      }),
    );
    const found = page.channels?.find((ch) => ch.name === name);
    if (found?.id) {
      if (channelIds.size > 10_000) channelIds.clear();
      channelIds.set(`${c.version}:${name}`, { id: found.id, until: Date.now() + 10 * 60_000 });
      return found.id;
    }
    cursor = page.response_metadata?.next_cursor || undefined;
  } while (cursor);
  throw refused(
    `Slack has no channel #${name} that connection "${c.name}" can see: check the name, or invite the bot to the private channel`,
    'SlackRefused',
  );
}
