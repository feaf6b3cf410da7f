// The Slack connector against a local Slack Web API (test/fakes/slack-api.ts) through @slack/web-api: connections
// made with a bot token or through an OAuth 2.0 account (a real provider, test/support/oidc-provider.ts), posts held
// until a reviewer approves them, retries and rate limits that never post twice, a run's file shared in a channel,
// a channel read by a tool node and by a model, the message.posted poller, and errors a person can act on.
import assert from 'node:assert/strict';
import { checkConnection } from '../../../activities/connectors/check';
import { loadSecretBox } from '../../../db/secret-box';
import { slackImplementation } from '../../../activities/connectors/slack';
import type { OpenedConnection } from '../../../activities/connectors/connector';
import { slackConfigSchema } from '../../../model/connectors/slack';
import { startFakeSlack, type FakeSlack } from '../../fakes/slack-api';
import {
  reply,
  startFakeAnthropic,
  toolResultsOf,
  toolUse,
  turnOf,
  apiErrors,
  type FakeAnthropic,
} from '../../fakes/anthropic';
import { startOidcProvider, type TestOidcProvider } from '../../support/oidc-provider';
import { connectOAuthAccount, connectionCallback, introspects } from '../../support/oauth-consent';
import { createHarness, createTestWorkspace, items, startApi, waitForRun, type Harness } from '../../support/harness';
import { connectorApi, type ConnectorApi, type Json } from '../../support/connections';

const botToken = 'xoxb-1111-2222-a-bot-token-of-the-test-app';

describe('connectors: Slack', function () {
  this.timeout(120_000);
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let c: ConnectorApi;
  let slackApi: FakeSlack;
  let idp: TestOidcProvider;
  let model: FakeAnthropic;
  let apiUrl: string;

  before(async () => {
    idp = await startOidcProvider('http://cadre.test/v1/auth/sso/callback', {
      connections: { redirectUri: connectionCallback },
    });
    // Slack accepts the bot token of its app, and the provider's access tokens that the provider says are active.
    slackApi = await startFakeSlack({ authorize: (token) => introspects(idp, token) });
    slackApi.addBotToken(botToken);
    slackApi.addChannel('sales');
    slackApi.addChannel('general', { member: false });
    slackApi.addChannel('board', { private: true, member: false });
    apiUrl = `${slackApi.url}/api/`;
    model = await startFakeAnthropic();
    h = await createHarness({
      config: {
        http: { allowHosts: ['127.0.0.1'] }, // Slack and the provider are on this machine
        model: { apiKey: 'test-key', baseUrl: model.url, name: 'claude-test', unavailableRetries: 0 },
      } as never,
    });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    c = connectorApi(h, api.url, t.key, t.workspace.id);
    await c.connect('team', 'slack', { api_url: apiUrl, default_channel: '#sales' }, { bot_token: botToken });
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await model?.close();
    await slackApi?.close();
    await idp?.close();
  });
  beforeEach(() => {
    model.reset();
    model.setHandler(() => apiErrors.internal('no handler set for this test'));
  });

  /** An agent of tool nodes on the "team" connection, its writes approved beforehand unless `review` says. */
  const agentOf = (nodes: Json[], opts: { review?: boolean; retries?: number; connection?: string } = {}) => ({
    name: 'slack steps',
    connections: [opts.connection ?? 'team'],
    nodes: [{ kind: 'input', id: 'in', format: 'json', next: nodes[0].id }, ...nodes],
    policy: {
      approvals: opts.review
        ? {}
        : Object.fromEntries(
            ['slack.post_message', 'slack.update_message', 'slack.upload_file'].map((t) => [t, { mode: 'never' }]),
          ),
      error_policy: { retries: opts.retries ?? 0, on_item_failure: 'continue' },
    },
  });
  const step = (id: string, tool: string, args: Json, next?: string) => ({
    kind: 'tool',
    id,
    tool,
    arguments: { connection: 'team', ...args },
    save_as: id,
    ...(next ? { next } : {}),
  });
  async function run(spec: Json, input: unknown[]) {
    const { started } = await c.runOf(spec, input);
    await waitForRun(h, started.id);
    return items(h, started.id);
  }
  const posts = (channel: string) =>
    slackApi.calls.filter((x) => x.method === 'chat.postMessage' && x.params.channel === slackApi.channel(channel).id);

  it('connects with a bot token or an account, never both or neither, and keeps the token secret', async () => {
    const made = (await c.call('GET', '/connections')).body.data.find((x: Json) => x.name === 'team');
    const tested = await c.call('POST', `/connections/${made.id}/test`);
    assert.equal(tested.body.ok, true, JSON.stringify(tested.body));
    assert.equal(tested.body.server_version, 'Slack workspace Cadre Test as cadre-bot');
    assert.deepEqual(tested.body.found, [`#sales (${slackApi.channel('sales').id})`]);

    const attempts: [Json, Json | undefined, RegExp][] = [
      [{ api_url: apiUrl }, undefined, /neither a bot token nor an account: give the bot token/],
      [
        { api_url: apiUrl },
        { bot_token: 'xoxb-not-a-token-slack-knows' },
        /refused by Slack \(invalid_auth\): give it a valid bot token/,
      ],
      [
        { api_url: apiUrl, default_channel: '#nowhere' },
        { bot_token: botToken },
        /no channel #nowhere that connection .* can see/,
      ],
    ];
    for (const [config, credentials, error] of attempts) {
      const res = await c.call('POST', '/connections', { name: 'wrong', kind: 'slack', config, credentials });
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.match(res.body.detail, error);
      const answer = JSON.stringify(res.body);
      assert.ok(!answer.includes(botToken) && !answer.includes('xoxb-not-a-token'), 'no token in the answer');
    }
    const unknownAccount = await c.call('POST', '/connections', {
      name: 'wrong',
      kind: 'slack',
      config: { api_url: apiUrl, account: 'no-such-account' },
    });
    assert.equal(unknownAccount.status, 422);
    assert.match(unknownAccount.body.detail, /no OAuth 2\.0 connection "no-such-account"/);

    // The token is never answered, nor stored in plain text.
    const answers = JSON.stringify([made, (await c.call('GET', `/connections/${made.id}`)).body, tested.body]);
    assert.ok(!answers.includes(botToken));
    const row = await h.stack.knex('connections').where({ id: made.id }).first();
    assert.ok(!JSON.stringify(row).includes(botToken), 'the row holds the token sealed');

    const connectors = await c.call('GET', '/connectors');
    const slack = connectors.body.data.find((k: Json) => k.kind === 'slack');
    assert.equal(slack.category, 'chat');
    assert.deepEqual(
      slack.tools.map((t: Json) => [t.name, t.approval_default]),
      [
        ['slack.post_message', 'always'],
        ['slack.update_message', 'always'],
        ['slack.upload_file', 'always'],
        ['slack.read_channel', 'never'],
        ['slack.list_channels', 'never'],
      ],
    );
    assert.deepEqual(
      slack.events.map((e: Json) => e.name),
      ['message.posted'],
    );
    assert.match(slack.config_schema.properties.account.description, /OAuth 2\.0 connection/);

    // Only hosts the operator allows are reached.
    await assert.rejects(
      checkConnection(
        'slack',
        slackConfigSchema.parse({ api_url: apiUrl }),
        { bot_token: botToken },
        { allowHosts: [] },
      ),
      /127\.0\.0\.1 resolves to 127\.0\.0\.1, a private or internal address; add the host to CADRE_HTTP_ALLOW_HOSTS/,
    );
  });

  it('holds a post until a reviewer approves it, and posts nothing that was rejected', async () => {
    const before = slackApi.messages('sales').length;
    const { started } = await c.runOf(
      agentOf([step('post', 'slack.post_message', { text: 'New lead: {{company}}' })], { review: true }),
      [{ company: 'Acme' }, { company: 'Globex' }],
    );
    const first = await c.waitForApproval(started.id);
    assert.equal(slackApi.messages('sales').length, before, 'nothing is posted while the approval waits');
    await c.decide(first.id, 'approve');
    const second = await c.waitForApproval(started.id);
    await c.decide(second.id, 'reject');
    await waitForRun(h, started.id);

    const fresh = slackApi.messages('sales').slice(before);
    assert.equal(fresh.length, 1);
    assert.equal(first.tool, 'slack.post_message');
    assert.equal(fresh[0].text, first.arguments.text, 'the approved post is the one that arrived');
    assert.match(fresh[0].text, /^New lead: (Acme|Globex)$/);
    assert.equal(fresh[0].metadata?.event_type, 'cadre_step', 'the post carries its step in its metadata');
    const rows = await items(h, started.id);
    const done = rows.find((r) => r.status === 'done')!;
    assert.equal(done.data.post.ts, fresh[0].ts);
    assert.equal(done.data.post.channel, slackApi.channel('sales').id);
  });

  it('waits out a rate limit and posts once; a retried step finds the post whose answer was lost', async () => {
    const before = slackApi.messages('sales').length;
    slackApi.rateLimit('chat.postMessage', 1);
    const [limited] = await run(agentOf([step('post', 'slack.post_message', { text: 'limited once' })]), [{}]);
    assert.equal(limited.status, 'done', limited.error);
    assert.deepEqual(slackApi.rateLimited, ['chat.postMessage'], 'Slack answered 429 once');
    assert.deepEqual(
      slackApi
        .messages('sales')
        .slice(before)
        .map((m) => m.text),
      ['limited once'],
    );

    // Slack posts it but the answer never comes back: the retry finds the post by its step's key.
    const calls = posts('sales').length;
    slackApi.loseAnswer('chat.postMessage');
    const [lost] = await run(agentOf([step('post', 'slack.post_message', { text: 'answer lost' })], { retries: 2 }), [
      {},
    ]);
    assert.equal(lost.status, 'done', lost.error);
    assert.equal(lost.data.post.already_posted, true);
    assert.equal(posts('sales').length, calls + 1, 'chat.postMessage was sent once');
    const lostOnes = slackApi.messages('sales').filter((m) => m.text === 'answer lost');
    assert.equal(lostOnes.length, 1);
    assert.equal(lost.data.post.ts, lostOnes[0].ts);

    // A limit that lasts longer than a step waits fails it as retryable, saying so.
    slackApi.rateLimit('conversations.history', 120);
    const [waiting] = await run(agentOf([step('read', 'slack.read_channel', {})]), [{}]);
    assert.equal(waiting.status, 'failed');
    assert.match(
      waiting.error,
      /Slack is still rate limiting the calls after 0 wait\(s\); the step is retried in 120 s/,
    );
  });

  it('replies in a thread, then changes the reply', async () => {
    const parent = slackApi.postAsPerson('sales', 'Can someone check the Acme order?');
    const [row] = await run(
      agentOf([
        step('reply', 'slack.post_message', { text: 'On it', thread_ts: '{{ts}}' }, 'edit'),
        step('edit', 'slack.update_message', { channel: '#sales', ts: '{{reply.ts}}', text: 'Done: shipped today' }),
      ]),
      [{ ts: parent.ts }],
    );
    assert.equal(row.status, 'done', row.error);
    const reply = slackApi.messages('sales').find((m) => m.ts === row.data.reply.ts)!;
    assert.equal(reply.thread_ts, parent.ts);
    assert.equal(reply.text, 'Done: shipped today');
    assert.ok(reply.edited);
    assert.equal(parent.reply_count, 1);
  });

  it('shares a file of the run in a channel with a comment', async () => {
    const [row] = await run(
      agentOf([
        {
          kind: 'tool',
          id: 'report',
          tool: 'file.generate',
          arguments: { file_name: 'leads', format: 'csv', rows: '{{rows}}' },
          save_as: 'report',
          next: 'share',
        },
        step('share', 'slack.upload_file', { file_id: '{{report.file_id}}', comment: 'Leads of the week' }),
      ]),
      [
        {
          rows: [
            { company: 'Acme', score: 9 },
            { company: 'Globex', score: 7 },
          ],
        },
      ],
    );
    assert.equal(row.status, 'done', row.error);
    const share = slackApi.messages('sales').find((m) => m.files?.some((f) => f.id === row.data.share.file.id))!;
    assert.equal(share.text, 'Leads of the week');
    assert.equal(share.files![0].name, 'leads.csv');
    const uploaded = slackApi.calls.find((x) => x.method === 'files.completeUploadExternal');
    assert.ok(uploaded);
    // The bytes that arrived are the run's file.
    const stored = await h.stack.knex('files').where({ id: row.data.report.file_id }).first();
    assert.equal(share.files![0].size, stored.size);

    // Slack shares the file but the answer is lost: the retry finds the bot's share instead of sharing again.
    slackApi.loseAnswer('files.completeUploadExternal');
    const shares = () => slackApi.messages('sales').filter((m) => m.files?.some((f) => f.name === 'lost.md')).length;
    const [lost] = await run(
      agentOf(
        [
          {
            kind: 'tool',
            id: 'report',
            tool: 'file.generate',
            arguments: { file_name: 'lost', format: 'markdown', text: 'shared once' },
            save_as: 'report',
            next: 'share',
          },
          step('share', 'slack.upload_file', { file_id: '{{report.file_id}}' }),
        ],
        { retries: 2 },
      ),
      [{}],
    );
    assert.equal(lost.status, 'done', lost.error);
    assert.equal(lost.data.share.already_shared, true);
    assert.equal(shares(), 1);

    const [missing] = await run(
      agentOf([step('share', 'slack.upload_file', { file_id: '00000000-0000-4000-8000-000000000000' })]),
      [{}],
    );
    assert.equal(missing.status, 'failed');
    assert.match(missing.error, /this run has no file 00000000-0000-4000-8000-000000000000/);
  });

  it('reads a channel, and says what to do about channels it cannot reach', async () => {
    slackApi.postAsPerson('sales', 'Lunch at noon?', 'U0PERSON2');
    const rows = await run(agentOf([step('read', 'slack.read_channel', { channel: '{{channel}}', limit: 2 })]), [
      { channel: '#sales' },
      { channel: 'nowhere' },
      { channel: '#board' },
    ]);
    assert.equal(rows[0].status, 'done', rows[0].error);
    assert.equal(rows[0].data.read.messages.length, 2);
    assert.deepEqual(
      { user: rows[0].data.read.messages[0].user, text: rows[0].data.read.messages[0].text },
      { user: 'U0PERSON2', text: 'Lunch at noon?' },
    );
    assert.equal(rows[0].data.read.has_more, true);
    assert.equal(rows[1].status, 'failed');
    assert.match(rows[1].error, /Slack has no channel #nowhere that connection "team" can see/);
    assert.match(rows[2].error, /no channel #board .*invite the bot to the private channel/);

    const [general] = await run(agentOf([step('post', 'slack.post_message', { channel: '#general', text: 'hello' })]), [
      {},
    ]);
    assert.match(general.error, /the bot is not a member of the channel: invite it there .*\(not_in_channel\)/);
  });

  it('a model reads the channel through the tool it is offered', async () => {
    slackApi.postAsPerson('sales', 'Globex wants a demo on Friday');
    model.setHandler((body) =>
      turnOf(body) === 0
        ? reply([toolUse('slack_read_channel', { connection: 'team', limit: 1 })])
        : reply([
            toolUse('submit_output', {
              latest: JSON.parse(String(toolResultsOf(body)[0].content)).messages[0].text,
            }),
          ]),
    );
    const [row] = await run(
      {
        name: 'what is new',
        connections: ['team'],
        nodes: [
          { kind: 'input', id: 'in', format: 'json', next: 'ask' },
          {
            kind: 'llm',
            id: 'ask',
            instructions: "What is the channel's latest message?",
            tools: ['slack.read_channel'],
            output_schema: { type: 'object', properties: { latest: { type: 'string' } }, required: ['latest'] },
          },
        ],
      },
      [{}],
    );
    assert.equal(row.status, 'done', row.error);
    assert.equal(row.data.latest, 'Globex wants a demo on Friday');
    const offered = model.requests[0].body.tools!.find((t) => t.name === 'slack_read_channel')!;
    assert.deepEqual((offered.input_schema as Json).properties.connection.enum, ['team']);
  });

  it('acts through an OAuth 2.0 account: the bot posts with the access token the provider issued', async () => {
    const accountId = await connectOAuthAccount(c, api.url, idp, 'slack-account');
    const accountRow = await h.stack.knex('connections').where({ id: accountId }).first();
    await c.connect('team-oauth', 'slack', { api_url: apiUrl, account: 'slack-account', default_channel: '#sales' });
    const both = await c.call('POST', '/connections', {
      name: 'both',
      kind: 'slack',
      config: { api_url: apiUrl, account: 'slack-account' },
      credentials: { bot_token: botToken },
    });
    assert.equal(both.status, 422);
    assert.match(both.body.detail, /names the account "slack-account" and also gives a bot token: keep one of them/);

    const spec = agentOf(
      [step('post', 'slack.post_message', { connection: 'team-oauth', text: 'posted as the account' })],
      { connection: 'team-oauth' },
    );
    const [row] = await run(spec, [{}]);
    assert.equal(row.status, 'done', row.error);
    assert.ok(slackApi.messages('sales').some((m) => m.text === 'posted as the account' && m.ts === row.data.post.ts));

    // Slack refuses a token it no longer accepts (here one the provider never issued): refreshed once, then posted.
    const box = loadSecretBox(h.config);
    const sealed = JSON.parse(box.open(accountRow.credentials_sealed));
    sealed.tokens.access_token = 'UnknownToken0123456789abcdefghijklmnopqrstu';
    await h.stack
      .knex('connections')
      .where({ id: accountId })
      .update({ credentials_sealed: box.seal(JSON.stringify(sealed)) });
    const [again] = await run(spec, [{}]);
    assert.equal(again.status, 'done', again.error);
    const renewed = JSON.parse(
      box.open((await h.stack.knex('connections').where({ id: accountId }).first()).credentials_sealed),
    );
    assert.notEqual(renewed.tokens.access_token, sealed.tokens.access_token, 'the refreshed token is kept');
  });

  it('reports new messages of the default channel from a cursor, oldest first', async () => {
    const connection: OpenedConnection = {
      name: 'team',
      kind: 'slack',
      config: slackConfigSchema.parse({ api_url: apiUrl, default_channel: '#sales' }),
      credentials: { bot_token: botToken },
      version: 'poller-test',
      limits: { allowHosts: ['127.0.0.1'] },
    };
    const poll = slackImplementation.pollers!['message.posted'];
    const start = await poll(connection as never, undefined);
    assert.deepEqual(start.events, [], 'a new trigger starts from now');
    const one = slackApi.postAsPerson('sales', 'first');
    const two = slackApi.postAsPerson('sales', 'second');
    const next = await poll(connection as never, start.cursor);
    assert.deepEqual(
      next.events.map((e) => [e.id, e.data.text]),
      [
        [`${slackApi.channel('sales').id}:${one.ts}`, 'first'],
        [`${slackApi.channel('sales').id}:${two.ts}`, 'second'],
      ],
    );
    assert.equal(next.cursor, two.ts);
    assert.deepEqual((await poll(connection as never, next.cursor)).events, []);
  });
});
