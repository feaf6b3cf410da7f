// The calendar connector against Radicale, a real CalDAV server: connected through the API (checked first, the
// password sealed), used by agents' tool nodes, whose writes wait for a reviewer and land in Radicale once even when
// the step runs twice; events other apps wrote are listed, changed and cancelled without losing what the connector
// does not know; free/busy and the event pollers answer what is in the calendar.
import assert from 'node:assert/strict';
import { connectorImplementations } from '../../../activities/connectors';
import { checkConnection } from '../../../activities/connectors/check';
import { serverFetch, type CaldavConnection } from '../../../activities/connectors/caldav/client';
import { caldavConfigSchema } from '../../../model/connectors/caldav';
import { createHarness, createTestWorkspace, items, startApi, waitForRun, type Harness } from '../../support/harness';
import { connectorApi, type ConnectorApi, type Json } from '../../support/connections';
import { startLossyProxy, startRadicale, type LossyProxy, type RadicaleServer } from '../../support/radicale';

const ics = (...vevent: string[]) =>
  ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//Another App//EN', ...vevent, 'END:VCALENDAR', ''].join('\r\n');

const event = (uid: string, ...lines: string[]) => [
  'BEGIN:VEVENT',
  `UID:${uid}`,
  'DTSTAMP:20261101T080000Z',
  ...lines,
  'END:VEVENT',
];

/** The unfolded content lines of an object's first VEVENT. */
const veventLines = (data: string) => {
  const lines = data.replace(/\r?\n[ \t]/g, '').split(/\r?\n/);
  return lines.slice(lines.indexOf('BEGIN:VEVENT'), lines.indexOf('END:VEVENT') + 1);
};

describe('connectors: calendar (CalDAV, Radicale)', function () {
  this.timeout(180_000);
  let radicale: RadicaleServer;
  let proxy: LossyProxy;
  let work: string;
  let personal: string;
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let workspaceId = '';
  let c: ConnectorApi;

  before(async () => {
    radicale = await startRadicale();
    work = await radicale.makeCalendar('work', 'Work');
    personal = await radicale.makeCalendar('personal', 'Personal');
    proxy = await startLossyProxy(radicale.url);
    h = await createHarness({ config: { http: { allowHosts: ['127.0.0.1'] } } as never });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    c = connectorApi(h, api.url, t.key, t.workspace.id);
    workspaceId = t.workspace.id;
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await proxy?.close();
    await radicale?.stop();
  });

  const settings = (over: Json = {}) => ({
    server_url: radicale.url,
    username: radicale.username,
    calendar: 'Work',
    timezone: 'Europe/Berlin',
    ...over,
  });

  const toolAgent = (connection: string, tool: string, args: Json) => ({
    name: `calendar ${tool}`,
    connections: [connection],
    // A step that fails for a passing reason runs again, with the same idempotency key.
    policy: { error_policy: { retries: 2, on_item_failure: 'continue' } },
    nodes: [
      { kind: 'input', id: 'in', format: 'json', next: 'cal' },
      { kind: 'tool', id: 'cal', tool, arguments: { connection, ...args }, save_as: 'out' },
    ],
  });

  /** Runs the tool on the items, approving every write it asks for, and answers the items. */
  async function runTool(tool: string, args: Json, input: unknown[] = [{}], connection = 'cal') {
    const { started } = await c.runOf(toolAgent(connection, tool, args), input);
    for (;;) {
      const run = await h.stack.knex('runs').where({ id: started.id }).first();
      if (['completed', 'failed', 'cancelled'].includes(run.status)) break;
      const pending = await c.call('GET', `/approvals?run_id=${started.id}&status=pending`);
      for (const a of pending.body.data) await c.decide(a.id, 'approve');
      await new Promise((r) => setTimeout(r, 100));
    }
    return items(h, started.id);
  }

  const objectsWith = async (calendar: string, text: string) =>
    (await radicale.objects(calendar)).filter((o) => o.data.includes(text));

  it('is checked before it is saved: a wrong password or calendar is refused, and the password never shows', async () => {
    const wrong = await c.call('POST', '/connections', {
      name: 'cal',
      kind: 'caldav',
      config: settings(),
      credentials: { password: 'not-the-password' },
    });
    assert.equal(wrong.status, 422);
    assert.equal(wrong.body.code, 'connection_failed');
    assert.match(wrong.body.detail, /could not connect to Calendar \(CalDAV\) at alice@127\.0\.0\.1:\d+/);
    assert.match(wrong.body.detail, /refused the user name or password of the calendar \(401\): check them/);

    const missing = await c.call('POST', '/connections', {
      name: 'cal',
      kind: 'caldav',
      config: settings({ calendar: 'Holidays' }),
      credentials: { password: radicale.password },
    });
    assert.equal(missing.status, 422);
    assert.match(missing.body.detail, /has no calendar "Holidays"; it has .*"Personal".*"Work"|"Work".*"Personal"/);
    assert.equal(
      await h.stack.knex('connections').where({ workspace_id: workspaceId, name: 'cal' }).first(),
      undefined,
    );

    const made = await c.connect('cal', 'caldav', settings(), { password: radicale.password });
    assert.equal(made.status, 'connected');
    assert.deepEqual(made.can, [
      'list events',
      'create event (asks approval)',
      'update event (asks approval)',
      'cancel event (asks approval)',
      'free busy',
    ]);
    const tested = await c.call('POST', `/connections/${made.id}/test`);
    assert.equal(tested.body.ok, true, JSON.stringify(tested.body));
    assert.match(tested.body.server_version, /^CalDAV/);
    assert.deepEqual([...tested.body.found].sort(), ['Personal', 'Work (used)']);

    const everything = JSON.stringify([made, tested.body, (await c.call('GET', '/connections')).body]);
    assert.ok(!everything.includes(radicale.password), 'no answer carries the password');
    const row = await h.stack.knex('connections').where({ id: made.id }).first();
    assert.ok(!JSON.stringify(row).includes(radicale.password), 'the row holds it sealed');

    const connectors = await c.call('GET', '/connectors');
    const caldav = connectors.body.data.find((k: Json) => k.kind === 'caldav');
    assert.equal(caldav.category, 'calendar');
    assert.deepEqual(
      caldav.tools.map((t: Json) => [t.name, t.approval_default]),
      [
        ['calendar.list_events', 'never'],
        ['calendar.create_event', 'always'],
        ['calendar.update_event', 'always'],
        ['calendar.cancel_event', 'always'],
        ['calendar.free_busy', 'never'],
      ],
    );
    assert.deepEqual(
      caldav.events.map((e: Json) => e.name),
      ['event.created', 'event.updated'],
    );
    assert.deepEqual(caldav.config_schema.required, ['server_url', 'username']);

    await c.connect('cal-lossy', 'caldav', settings({ server_url: proxy.url }), { password: radicale.password });
  });

  it('reaches only addresses the operator allows, and only the server it names', async () => {
    await assert.rejects(
      checkConnection('caldav', settings(), { password: radicale.password }, { allowHosts: [] }),
      /127\.0\.0\.1 resolves to 127\.0\.0\.1, a private or internal address; add the host to CADRE_HTTP_ALLOW_HOSTS/,
    );
    const opened: CaldavConnection = {
      name: 'cal',
      kind: 'caldav',
      version: 'v1',
      config: caldavConfigSchema.parse(settings()),
      credentials: { password: radicale.password },
      limits: { allowHosts: ['127.0.0.1'] },
    };
    const guarded = serverFetch(opened, new URL(radicale.url), {});
    await assert.rejects(
      guarded('http://127.0.0.2:80/alice/', { method: 'PROPFIND' }),
      /pointed to http:\/\/127\.0\.0\.2, but connection "cal" reaches only http:\/\/127\.0\.0\.1:\d+/,
    );

    // Redirects within the server are followed; one elsewhere (here to https) says which address to give.
    const viaProxy = serverFetch(opened, new URL(proxy.url), {});
    proxy.answerNext('PROPFIND', /^\/moved\/$/, 308, { location: '/alice/' });
    const authorization = `Basic ${Buffer.from(`${radicale.username}:${radicale.password}`).toString('base64')}`;
    const followed = await viaProxy(new URL('/moved/', proxy.url), {
      method: 'PROPFIND',
      headers: { depth: '0', authorization },
    });
    assert.equal(followed.status, 207, 'Radicale answered for /alice/');
    proxy.answerNext('PROPFIND', /^\/dav\/$/, 301, { location: 'https://calendar.example.com/dav/' });
    await assert.rejects(
      viaProxy(new URL('/dav/', proxy.url), { method: 'PROPFIND' }),
      /\/dav\/ redirects to https:\/\/calendar\.example\.com\/dav\/: give that as the server address of connection "cal"/,
    );
  });

  it('a created event waits for approval, then is in Radicale once, as given', async () => {
    const { started } = await c.runOf(
      toolAgent('cal', 'calendar.create_event', {
        summary: '{{title}}',
        start: '{{start}}',
        end: '{{end}}',
        location: 'Room 2, 3rd floor',
        description: 'Agenda:\n1. numbers; 2. plans',
        attendees: ['{{who}}', 'bob@example.com'],
      }),
      [
        {
          title: 'Budget review; Q3, final',
          start: '2026-12-01T10:00',
          end: '2026-12-01T11:30',
          who: 'Ann Lee <ann@example.com>',
        },
      ],
    );
    const approval = await c.waitForApproval(started.id);
    assert.equal(approval.tool, 'calendar.create_event');
    assert.deepEqual(await objectsWith(work, 'Budget review'), [], 'nothing is written before the approval');
    await c.decide(approval.id, 'approve');
    await waitForRun(h, started.id);
    const [item] = await items(h, started.id);
    assert.equal(item.status, 'done', item.error);
    const out = item.data.out;
    assert.match(out.uid, /^cadre-[0-9a-f]{40}$/);
    assert.equal(out.created, true);
    assert.equal(out.event.start, '2026-12-01T10:00:00+01:00');
    assert.equal(out.event.summary, 'Budget review; Q3, final');

    const stored = await objectsWith(work, out.uid);
    assert.equal(stored.length, 1);
    const lines = veventLines(stored[0].data);
    assert.ok(lines.includes('SUMMARY:Budget review\\; Q3\\, final'), lines.join('\n'));
    assert.ok(lines.includes('DTSTART:20261201T090000Z'), 'a time without offset is in the connection’s zone');
    assert.ok(lines.includes('DTEND:20261201T103000Z'));
    assert.ok(lines.includes('LOCATION:Room 2\\, 3rd floor'));
    assert.ok(lines.includes('DESCRIPTION:Agenda:\\n1. numbers\\; 2. plans'));
    assert.ok(
      lines.some((l) => /^ATTENDEE;CN=Ann Lee;.*:mailto:ann@example\.com$/.test(l)),
      lines.join('\n'),
    );
    assert.ok(lines.some((l) => /^ATTENDEE;.*:mailto:bob@example\.com$/.test(l)));

    const listed = await runTool('calendar.list_events', { from: '2026-12-01', to: '2026-12-02' });
    const found = listed[0].data.out.events.find((e: Json) => e.uid === out.uid);
    assert.deepEqual(
      { ...found, attendees: found.attendees.map((a: Json) => a.email) },
      {
        uid: out.uid,
        summary: 'Budget review; Q3, final',
        start: '2026-12-01T10:00:00+01:00',
        end: '2026-12-01T11:30:00+01:00',
        all_day: false,
        location: 'Room 2, 3rd floor',
        description: 'Agenda:\n1. numbers; 2. plans',
        attendees: ['ann@example.com', 'bob@example.com'],
        organizer: null,
        status: 'CONFIRMED',
        recurring: false,
      },
    );
  });

  it('a create whose answer was lost runs again with the same key and still makes one event', async () => {
    proxy.loseAnswerTo('PUT', /\.ics$/);
    const [item] = await runTool(
      'calendar.create_event',
      { summary: 'Retried standup', start: '2026-12-03T09:00:00Z', end: '2026-12-03T09:15:00Z' },
      [{}],
      'cal-lossy',
    );
    assert.equal(item.status, 'done', item.error);
    const puts = proxy.requests.filter((r) => r.method === 'PUT');
    assert.deepEqual(
      puts.map((r) => r.status),
      [201, 412],
      'the second try found the event the first made (If-None-Match: *)',
    );
    assert.equal(puts[0].path, puts[1].path);
    assert.equal(item.data.out.created, false);
    assert.equal((await objectsWith(work, 'Retried standup')).length, 1);
  });

  it('waits as a 429 answer asks (Retry-After) and then reads', async () => {
    proxy.answerNext('REPORT', /\/work\/$/, 429, { 'retry-after': '1' });
    const before = proxy.requests.length;
    const [item] = await runTool('calendar.list_events', { from: '2026-12-03', to: '2026-12-04' }, [{}], 'cal-lossy');
    assert.equal(item.status, 'done', item.error);
    assert.deepEqual(
      item.data.out.events.map((e: Json) => e.summary),
      ['Retried standup'],
    );
    const reports = proxy.requests.slice(before).filter((r) => r.method === 'REPORT');
    assert.deepEqual(
      reports.map((r) => r.status),
      [429, 207],
      'asked again, once, within the same step',
    );
  });

  it('an update changes only what is given, keeps what other apps stored, and guards with the ETag', async () => {
    await radicale.put(
      work,
      'team-sync.ics',
      ics(
        ...event(
          'team-sync-1',
          'DTSTART;TZID=Europe/Berlin:20261202T140000',
          'DTEND;TZID=Europe/Berlin:20261202T150000',
          'SUMMARY:Team sync',
          'X-APP-COLOR:teal',
          'BEGIN:VALARM',
          'ACTION:DISPLAY',
          'DESCRIPTION:Reminder',
          'TRIGGER:-PT10M',
          'END:VALARM',
        ),
      ),
    );
    const [before] = await objectsWith(work, 'team-sync-1');
    const [done, unknown] = await runTool(
      'calendar.update_event',
      { uid: '{{uid}}', summary: '{{summary}}', start: '{{start}}' },
      [
        { uid: 'team-sync-1', summary: 'Team sync (moved)', start: '2026-12-02T15:00' },
        { uid: 'no-such-event', summary: 'x', start: '2026-12-02T15:00' },
      ],
      'cal-lossy',
    );
    assert.equal(done.status, 'done', done.error);
    assert.deepEqual(done.data.out.changed, ['summary', 'start', 'end']);
    assert.equal(done.data.out.event.end, '2026-12-02T16:00:00+01:00', 'moving the start keeps the length');
    assert.equal(unknown.status, 'failed');
    assert.match(unknown.error, /calendar "Work" of connection "cal-lossy" has no event with uid "no-such-event"/);

    const put = proxy.requests.filter((r) => r.method === 'PUT' && r.path.endsWith('/team-sync.ics'));
    assert.equal(put.length, 1);
    assert.equal(put[0].ifMatch, before.etag, 'the write names the version it changed');
    const lines = veventLines((await objectsWith(work, 'team-sync-1'))[0].data);
    for (const kept of [
      'SUMMARY:Team sync (moved)',
      'DTSTART;TZID=Europe/Berlin:20261202T150000',
      'DTEND;TZID=Europe/Berlin:20261202T160000',
      'X-APP-COLOR:teal',
      'TRIGGER:-PT10M',
      'SEQUENCE:1',
    ])
      assert.ok(lines.includes(kept), `${kept} in\n${lines.join('\n')}`);

    const [again] = await runTool('calendar.update_event', { uid: 'team-sync-1', summary: 'Team sync (moved)' });
    assert.deepEqual(again.data.out.changed, [], 'a change already made writes nothing');
  });

  it('cancelling marks the event cancelled once; lists skip it unless asked', async () => {
    const [first] = await runTool('calendar.cancel_event', { uid: 'team-sync-1' });
    assert.equal(first.status, 'done', first.error);
    assert.equal(first.data.out.already_cancelled, false);
    const [stored] = await objectsWith(work, 'team-sync-1');
    const lines = veventLines(stored.data);
    assert.ok(lines.includes('STATUS:CANCELLED'));
    assert.ok(lines.includes('SEQUENCE:2'));

    const [second] = await runTool('calendar.cancel_event', { uid: 'team-sync-1' });
    assert.equal(second.data.out.already_cancelled, true);
    assert.equal((await objectsWith(work, 'team-sync-1'))[0].etag, stored.etag, 'nothing was written again');

    const [listed] = await runTool('calendar.list_events', { from: '2026-12-02', to: '2026-12-03' });
    assert.equal(listed.data.out.events.filter((e: Json) => e.uid === 'team-sync-1').length, 0);
    const [all] = await runTool('calendar.list_events', {
      from: '2026-12-02',
      to: '2026-12-03',
      include_cancelled: true,
    });
    assert.equal(all.data.out.events.find((e: Json) => e.uid === 'team-sync-1').status, 'CANCELLED');
  });

  it('lists each occurrence in a period and answers when the calendar is busy', async () => {
    await radicale.put(
      work,
      'standup.ics',
      ics(
        ...event(
          'standup',
          'DTSTART;TZID=Europe/Berlin:20261207T090000',
          'DTEND;TZID=Europe/Berlin:20261207T091500',
          'RRULE:FREQ=DAILY;COUNT=3',
          'SUMMARY:Standup',
        ),
      ),
    );
    await radicale.put(
      work,
      'offsite.ics',
      ics(
        ...event(
          'offsite',
          'DTSTART;VALUE=DATE:20261208',
          'DTEND;VALUE=DATE:20261209',
          'SUMMARY:Offsite',
          'TRANSP:TRANSPARENT',
        ),
      ),
    );
    await radicale.put(
      work,
      'review.ics',
      ics(...event('review', 'DTSTART:20261208T081000Z', 'DURATION:PT50M', 'SUMMARY:Review')),
    );
    await radicale.put(
      work,
      'dropped.ics',
      ics(
        ...event(
          'dropped',
          'DTSTART:20261209T130000Z',
          'DTEND:20261209T140000Z',
          'SUMMARY:Dropped',
          'STATUS:CANCELLED',
        ),
      ),
    );

    const [listed] = await runTool('calendar.list_events', { from: '2026-12-07', to: '2026-12-10' });
    assert.equal(listed.status, 'done', listed.error);
    assert.deepEqual(
      listed.data.out.events.map((e: Json) => [e.summary, e.start, e.end, e.all_day]),
      [
        ['Standup', '2026-12-07T09:00:00+01:00', '2026-12-07T09:15:00+01:00', false],
        ['Offsite', '2026-12-08', '2026-12-09', true],
        ['Standup', '2026-12-08T09:00:00+01:00', '2026-12-08T09:15:00+01:00', false],
        ['Review', '2026-12-08T09:10:00+01:00', '2026-12-08T10:00:00+01:00', false],
        ['Standup', '2026-12-09T09:00:00+01:00', '2026-12-09T09:15:00+01:00', false],
      ],
    );
    assert.equal(listed.data.out.events[0].recurrence_id, '2026-12-07T09:00:00+01:00');

    const [busy] = await runTool('calendar.free_busy', { from: '2026-12-07T00:00', to: '2026-12-10T00:00' });
    assert.equal(busy.status, 'done', busy.error);
    assert.deepEqual(busy.data.out.busy, [
      { start: '2026-12-07T09:00:00+01:00', end: '2026-12-07T09:15:00+01:00' },
      { start: '2026-12-08T09:00:00+01:00', end: '2026-12-08T10:00:00+01:00' },
      { start: '2026-12-09T09:00:00+01:00', end: '2026-12-09T09:15:00+01:00' },
    ]);

    const [bad] = await runTool('calendar.list_events', { from: 'next tuesday', to: '2026-12-10' });
    assert.equal(bad.status, 'failed');
    assert.match(bad.error, /from "next tuesday" is neither a date \(YYYY-MM-DD, all day\) nor a time/);
  });

  describe('event pollers', () => {
    const opened = (): CaldavConnection => ({
      name: 'personal',
      kind: 'caldav',
      version: 'poller-test',
      config: caldavConfigSchema.parse(settings({ calendar: 'Personal' })),
      credentials: { password: radicale.password },
      limits: { allowHosts: ['127.0.0.1'] },
    });
    const poll = (which: 'event.created' | 'event.updated', cursor?: string) =>
      connectorImplementations.caldav.pollers![which](opened(), cursor, {});

    it('report a new event once as created, and a change once as updated', async () => {
      await radicale.put(
        personal,
        'old.ics',
        ics(...event('old', 'DTSTART:20261205T120000Z', 'SUMMARY:Before the trigger')),
      );
      const created0 = await poll('event.created');
      const updated0 = await poll('event.updated');
      assert.deepEqual([created0.events, updated0.events], [[], []], 'a new trigger starts from now');

      await radicale.put(
        personal,
        'lunch.ics',
        ics(
          ...event(
            'lunch',
            'DTSTART:20261205T110000Z',
            'DTEND:20261205T120000Z',
            'SUMMARY:Lunch',
            'CREATED:20261125T100000Z',
          ),
        ),
      );
      const created1 = await poll('event.created', created0.cursor);
      assert.deepEqual(
        created1.events.map((e) => [e.id, e.data.summary, e.data.start, e.occurred_at]),
        [['lunch', 'Lunch', '2026-12-05T12:00:00+01:00', '2026-11-25T10:00:00.000Z']],
      );
      const updated1 = await poll('event.updated', updated0.cursor);
      assert.deepEqual(updated1.events, [], 'a new event is no update');
      assert.deepEqual((await poll('event.created', created1.cursor)).events, [], 'reported once');

      await radicale.put(
        personal,
        'lunch.ics',
        ics(
          ...event(
            'lunch',
            'DTSTART:20261205T113000Z',
            'DTEND:20261205T123000Z',
            'SUMMARY:Lunch\\, later',
            'SEQUENCE:1',
          ),
        ),
      );
      const created2 = await poll('event.created', created1.cursor);
      assert.deepEqual(created2.events, [], 'a change is not a creation');
      const updated2 = await poll('event.updated', updated1.cursor);
      const [etag] = (await radicale.objects(personal)).filter((o) => o.href.endsWith('/lunch.ics')).map((o) => o.etag);
      assert.deepEqual(
        updated2.events.map((e) => [e.id, e.data.summary]),
        [[`lunch@${etag}`, 'Lunch, later']],
      );
      assert.deepEqual((await poll('event.updated', updated2.cursor)).events, []);
    });

    it('still tell created from updated when the server no longer knows the sync token', async () => {
      const start = await poll('event.created');
      const stale = JSON.stringify({ ...JSON.parse(start.cursor), token: 'http://radicale.org/ns/sync/unknown' });
      await radicale.put(personal, 'dinner.ics', ics(...event('dinner', 'DTSTART:20261205T180000Z', 'SUMMARY:Dinner')));
      await radicale.put(
        personal,
        'lunch.ics',
        ics(...event('lunch', 'DTSTART:20261205T113000Z', 'SUMMARY:Lunch\\, moved again')),
      );
      const created = await poll('event.created', stale);
      assert.deepEqual(
        created.events.map((e) => e.id),
        ['dinner'],
      );
      const updated = await poll('event.updated', stale);
      assert.deepEqual(
        updated.events.map((e) => e.data.summary),
        ['Lunch, moved again'],
      );
      assert.notEqual(JSON.parse(created.cursor).token, JSON.parse(stale).token, 'a fresh token is kept');
    });
  });
});
