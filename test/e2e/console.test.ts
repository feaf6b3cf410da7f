// The console (ui/) against a contract-shaped fake of API v1 (api/CONTRACT.md): the real build, served by its own
// Node process exactly as the web process mounts it, reading the fake over HTTP with its bearer key. Checks what
// the console owns: pages render what the API returns, form actions send the right calls, API refusals reach the
// reader, file downloads stream through, cross-site form posts are refused. A browser pass follows when
// playwright-core and Debian's chromium are installed.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import { createCanvas } from '@napi-rs/canvas';
import busboy from 'busboy';
import express from 'express';
import { buildConsole, consoleHandlerPath } from '../support/console-build';

const chromiumPath = '/usr/bin/chromium';
const KEY = 'console-test-key';

const now = Date.now();
const ago = (ms: number) => new Date(now - ms).toISOString();
const counts = (c: Partial<Record<string, number>>) => ({
  total: 0,
  pending: 0,
  running: 0,
  done: 0,
  failed: 0,
  needs_review: 0,
  skipped: 0,
  ...c,
});

interface Call {
  method: string;
  path: string;
  body: unknown;
  forwardedFor?: string | string[];
}

/** A few agents, runs and approvals, shaped as the contract says; it records every call the console makes. */
function fakeApi() {
  const calls: Call[] = [];
  const spec = {
    name: 'Invoice router',
    description: 'Routes invoices',
    instructions: 'Pay small invoices; a person approves large ones.',
    nodes: [
      { kind: 'input', id: 'rows', format: 'csv', next: 'route' },
      {
        kind: 'branch',
        id: 'route',
        branches: [{ when: { field: 'amount', op: 'gt', value: 1000 }, next: 'pay' }],
        otherwise: 'report',
      },
      { kind: 'tool', id: 'pay', tool: 'webhook.post', arguments: { amount: '{{amount}}' }, next: 'report' },
      { kind: 'output', id: 'report', format: 'xlsx', file_name: 'report.xlsx' },
    ],
  };
  const run = {
    id: '11111111-1111-4111-8111-111111111111',
    agent_id: 'agent-live',
    agent_name: 'Invoice router',
    agent_version: 3,
    status: 'needs_review',
    trigger: 'manual',
    input: 'amount\n5\n4200\n',
    created_at: ago(60_000),
    started_at: ago(59_000),
    ended_at: null,
    duration_ms: null,
    counts: counts({ total: 3, done: 1, failed: 1, needs_review: 1 }),
    error: null,
    links: { self: '/v1/runs/1111', console: '/runs/1111', temporal: 'http://temporal.test/workflows/run-1111' },
  };
  const failedRun = {
    ...run,
    id: '22222222-2222-4222-8222-222222222222',
    status: 'failed',
    trigger: 'schedule',
    ended_at: ago(1000),
    duration_ms: 58_000,
    error: 'no model configured: set ANTHROPIC_API_KEY',
  };
  const agents = [
    { id: 'agent-live', workspace_id: 'ws', name: 'Invoice router', description: 'Routes invoices', state: 'live' },
    { id: 'agent-draft', workspace_id: 'ws', name: 'Draft helper', description: '', state: 'draft' },
  ].map((a) => ({
    ...a,
    current_version: 3,
    created_at: ago(86_400_000),
    updated_at: ago(3_600_000),
    last_run: a.state === 'live' ? run : null,
    runs_this_month: a.state === 'live' ? 42 : 0,
  }));
  const approval = {
    id: 'approval-1',
    run_id: run.id,
    item_seq: 2,
    node_id: 'pay',
    tool: 'webhook.post',
    arguments: { amount: 4200 },
    status: 'pending',
    requested_at: ago(30_000),
    decided_at: null,
    decided_by: null,
    reason: 'Amount above 1000',
  };
  // An approval node's gate, approved with an edited amount on the run that failed later.
  const editedApproval = {
    id: 'approval-2',
    run_id: failedRun.id,
    item_seq: 0,
    node_id: 'gate',
    tool: 'approval',
    message: 'Pay 4200 to Globex?',
    arguments: { amount: 4200, vendor: 'Globex' },
    status: 'approved',
    decided_arguments: { amount: 4000 },
    requested_at: ago(50_000),
    decided_at: ago(40_000),
    decided_by: 'ann@example.test',
    reason: null,
  };
  const runs = [run, failedRun];

  const app = express();
  app.use(express.json());
  app.use((req, res, next) => {
    calls.push({
      method: req.method,
      path: req.originalUrl,
      body: req.body,
      forwardedFor: req.headers['x-forwarded-for'],
    });
    // Forms are public in the API: the console sends their submissions without its key.
    if (req.path.startsWith('/v1/forms/')) return next();
    if (req.headers.authorization !== `Bearer ${KEY}`) {
      res.status(401).type('application/problem+json').json({ status: 401, title: 'Unauthorized', detail: 'bad key' });
      return;
    }
    next();
  });
  const problem = (res: express.Response, status: number, detail: string) =>
    res.status(status).type('application/problem+json').json({ type: 'about:blank', title: 'Error', status, detail });
  const agentById = (id: string) => agents.find((a) => a.id === id);

  app.get('/v1/agents', (_req, res) => res.json({ data: agents, next_cursor: null }));
  app.get('/v1/agents/:id', (req, res) => {
    const agent = agentById(req.params.id);
    if (!agent) return problem(res, 404, `no agent ${req.params.id} in this workspace`);
    res.json({ ...agent, spec });
  });
  app.post('/v1/agents/:id/state', (req, res) => {
    const agent = agentById(req.params.id)!;
    if (agent.state === 'draft') return problem(res, 409, 'version 3 has no successful test run yet');
    agent.state = req.body.state;
    res.json(agent);
  });
  for (const mode of ['manual-run', 'test-run']) {
    app.post(`/v1/agents/:id/${mode}`, (req, res) => {
      const started = {
        ...run,
        id: `new-${mode}`,
        status: 'running',
        trigger: mode === 'manual-run' ? 'manual' : 'test',
      };
      runs.unshift(started);
      res.status(202).json(started);
    });
  }
  app.get('/v1/runs', (req, res) =>
    res.json({ data: runs.filter((r) => !req.query.status || r.status === req.query.status), next_cursor: null }),
  );
  app.get('/v1/runs/:id', (req, res) => {
    const found = runs.find((r) => r.id === req.params.id);
    if (!found) return problem(res, 404, `no run ${req.params.id} in this workspace`);
    res.json({
      ...found,
      node_activity: [
        {
          node_id: 'rows',
          kind: 'input',
          items_in: 3,
          items_done: 3,
          items_failed: 0,
          started_at: ago(59_000),
          ended_at: ago(58_000),
        },
      ],
      approvals: found.id === run.id ? [approval] : found.id === failedRun.id ? [editedApproval] : [],
      outputs: [{ node_id: 'report', data: { paid_total: 5 } }],
      files: [{ id: 'file-1', name: 'report.csv', content_type: 'text/csv', size: 8, url: '/v1/runs/x/files/file-1' }],
      usage: { input_tokens: 0, output_tokens: 0, cost_usd: 0 },
    });
  });
  app.get('/v1/runs/:id/items', (_req, res) =>
    res.json({
      data: [
        {
          seq: 0,
          status: 'done',
          data: { amount: 5 },
          output: { paid: true },
          error: null,
          reasoning: [
            { node: 'pay', type: 'text', text: 'The amount is small; paying it.' },
            { node: 'pay', type: 'tool_call', tool: 'webhook.post', input: { amount: 5, meta: { source: 'csv' } } },
            { node: 'pay', type: 'tool_result', tool: 'webhook.post', output: '{"status":200,"body":{"ok":true}}' },
          ],
        },
        { seq: 2, status: 'failed', data: {}, output: null, error: 'amount is missing', reasoning: [] },
      ],
      next_cursor: null,
    }),
  );
  app.get('/v1/runs/:id/logs', (_req, res) =>
    res.json({
      data: [
        { seq: 1, at: ago(59_000), level: 'info', node_id: 'rows', item_seq: null, message: 'split into 3 items' },
      ],
      next_cursor: null,
    }),
  );
  app.get('/v1/runs/:id/files/:fileId', (_req, res) => {
    res.attachment('report.csv').type('text/csv').send('a,b\n1,2\n');
  });
  app.post('/v1/runs/:id/cancel', (_req, res) => res.status(202).json({ ...run, status: 'cancelled' }));
  app.get('/v1/approvals', (req, res) =>
    res.json({ data: req.query.status === 'pending' ? [approval] : [], next_cursor: null }),
  );
  app.post('/v1/approvals/:id/decision', (req, res) => {
    if (approval.status !== 'pending') return problem(res, 409, 'this approval is already decided');
    res.json(approval);
  });
  const triggers = [
    {
      id: 'trigger-schedule',
      agent_id: 'agent-live',
      kind: 'schedule',
      name: 'every weekday at 09:00, Europe/Berlin',
      active: true,
      config: {},
      created_at: ago(3_600_000),
      schedule: {
        schedule_id: 'agent-agent-live-trigger-trigger-schedule',
        paused: false,
        description: 'every weekday at 09:00, Europe/Berlin',
        policies: 'if a run is still going: skip the new fire while the previous scheduled run is still going',
        timezone: 'Europe/Berlin',
        next_fire_times: ['2027-03-29T07:00:00.000Z', '2027-03-30T07:00:00.000Z'],
      },
    },
    {
      id: 'trigger-hook',
      agent_id: 'agent-live',
      kind: 'webhook',
      name: 'Webhook',
      active: true,
      config: {},
      created_at: ago(3_600_000),
      webhook: {
        url: 'http://cadre.test/v1/hooks/trigger-hook',
        signing: 'Standard Webhooks',
        replay_window_seconds: 300,
      },
    },
  ];
  app.get('/v1/agents/:id/triggers', (req, res) =>
    res.json({ data: req.params.id === 'agent-live' ? triggers : [], next_cursor: null }),
  );
  app.post('/v1/agents/:id/triggers', (req, res) =>
    res.status(201).json({
      ...triggers[0],
      id: 'trigger-new',
      schedule: { ...triggers[0].schedule, description: 'every day at 06:30, UTC' },
    }),
  );
  app.post('/v1/schedules/preview', (_req, res) =>
    res.json({
      description: 'every day at 06:30, UTC',
      policies: 'if a run is still going: skip',
      timezone: 'UTC',
      next_fire_times: [ago(-3_600_000)],
    }),
  );
  app.get('/v1/agents/:id/versions', (_req, res) =>
    res.json({
      data: [3, 2, 1].map((version) => ({ version, created_at: ago(version * 3_600_000) })),
      next_cursor: null,
    }),
  );
  app.get('/v1/agents/:id/versions/:version', (req, res) => res.json({ version: Number(req.params.version), spec }));
  app.get('/v1/agents/:id/diff', (req, res) =>
    res.json({
      from: Number(req.query.from),
      to: Number(req.query.to),
      changes: [{ path: 'instructions', from: 'Pay every invoice.', to: spec.instructions }],
    }),
  );
  app.post('/v1/agents/:id/versions/:version/restore', (_req, res) => res.json({ ...agents[0], current_version: 4 }));
  app.post('/v1/agents', (req, res) => res.status(201).json({ ...agents[1], id: 'agent-new', name: req.body.name }));
  app.post('/v1/agents/import', (req, res) => {
    if (!Array.isArray(req.body.nodes)) return problem(res, 422, 'nodes: Invalid input: expected array');
    res.status(201).json({ ...agents[1], id: 'agent-imported', name: req.body.name });
  });
  app.post('/v1/agents/:id/duplicate', (req, res) =>
    res.status(201).json({ ...agentById(req.params.id), id: 'agent-copy', state: 'draft' }),
  );
  app.get('/v1/agents/:id/export', (_req, res) => res.attachment('Invoice-router.json').json(spec));
  app.get('/v1/agents/:id/state-store', (req, res) =>
    res.json({
      data:
        req.params.id === 'agent-live'
          ? [
              { key: 'paid_total', value: 1234.5, version: 7, updated_at: ago(5_000) },
              { key: 'ledger', value: [{ payee: 'Acme', amount: 250 }], version: 2, updated_at: ago(5_000) },
            ]
          : [],
      next_cursor: null,
    }),
  );
  app.delete('/v1/agents/:id/state-store/:key', (_req, res) => res.status(204).end());
  app.get('/v1/agents/:id/run-links', (_req, res) => res.json({ data: [], next_cursor: null }));
  app.get('/v1/tools', (_req, res) =>
    res.json({
      data: [
        {
          name: 'http.request',
          description: 'Call a JSON/REST endpoint.',
          side_effect: 'external',
          approval_default: 'never',
        },
        { name: 'state.get', description: 'Read a value.', side_effect: 'read', approval_default: 'never' },
      ],
      next_cursor: null,
    }),
  );
  // The workspace has no connections and no skills of its own (the editor lists both).
  app.get('/v1/connections', (_req, res) => res.json({ data: [], next_cursor: null }));
  // One connector with an event, which the agent page names as what an event trigger needs.
  app.get('/v1/connectors', (_req, res) =>
    res.json({
      data: [
        {
          kind: 'slack',
          label: 'Slack',
          category: 'chat',
          description: 'Messages in channels',
          config_schema: {},
          credentials_schema: {},
          tools: [],
          events: [{ name: 'message.received', description: 'A message is posted in a channel', options_schema: {} }],
        },
      ],
      next_cursor: null,
    }),
  );
  app.get('/v1/skills', (_req, res) => res.json({ data: [], platform: [], next_cursor: null }));
  app.get('/v1/runs/:id/skill-context', (_req, res) => res.json({ data: [], skills: [], next_cursor: null }));
  app.put('/v1/agents/:id', (req, res) => {
    if (!req.body.name) return problem(res, 422, 'name: Too small: expected string to have >=1 characters');
    res.json({ ...agentById(req.params.id), current_version: 4, spec: req.body });
  });
  app.get('/v1/stats/daily', (req, res) =>
    res.json({
      days: Number(req.query.days),
      data: Array.from({ length: Number(req.query.days) }, (_, i) => ({
        date: new Date(now - (Number(req.query.days) - 1 - i) * 86_400_000).toISOString().slice(0, 10),
        runs: i === 0 ? 0 : 3,
        by_status: i === 0 ? {} : { completed: 2, failed: 1 },
        items: i === 0 ? 0 : 120,
        failed_items: i === 0 ? 0 : 7,
        avg_duration_ms: i === 0 ? null : 65_000,
        cost_usd: i === 0 ? 0 : 0.42,
      })),
    }),
  );
  app.get('/v1/agents/:id/timeline', (_req, res) =>
    res.json({
      data: [
        {
          id: 2,
          at: ago(10_000),
          kind: 'trigger_skipped',
          message: 'Webhook: delivery msg_1 received again, skipped (duplicate)',
          run_id: null,
          trigger_id: 'trigger-hook',
        },
        {
          id: 1,
          at: ago(20_000),
          kind: 'trigger_fired',
          message: 'Webhook: delivery msg_1 received, started a run',
          run_id: run.id,
          trigger_id: 'trigger-hook',
        },
      ],
      next_cursor: null,
    }),
  );
  const expenseForm = {
    id: 'form-1',
    title: 'Expense claim',
    description: 'Claim back what you spent.',
    fields: [
      { name: 'email', label: 'Your email', type: 'email', required: true },
      { name: 'category', label: 'Category', type: 'select', required: false, options: ['travel', 'meals'] },
    ],
    submit_label: 'Send claim',
    accepting: true,
  };
  app.get('/v1/forms/:id', (req, res) =>
    req.params.id === 'form-1' ? res.json(expenseForm) : problem(res, 404, `no form ${req.params.id}`),
  );
  app.post('/v1/forms/:id/submissions', (req, res) => {
    if (!String(req.body.email ?? '').includes('@'))
      return res
        .status(422)
        .type('application/problem+json')
        .json({
          status: 422,
          detail: 'Your email must be an email address',
          errors: [{ field: 'email', message: 'Your email must be an email address' }],
        });
    res.status(202).json({ status: 'started', run_id: 'run-from-form' });
  });
  // Sources: one replaced (v2 in use, v1 archived), one still indexing; a cited passage on a PDF page.
  const sourceVersion = (version: number, status: string, file: string, extra: object = {}) => ({
    version,
    status,
    error: null,
    progress: { pages_done: 2, pages_total: 2 },
    passages: 6,
    created_at: ago(version * 3_600_000),
    created_by: 'API key "ci"',
    indexed_at: ago(version * 3_500_000),
    activated_at: ago(version * 3_500_000),
    archived_at: status === 'archived' ? ago(1_000_000) : null,
    documents: [
      {
        id: `doc-${version}`,
        file_name: file,
        url: null,
        format: 'pdf',
        size: 2048,
        sha256: null,
        status: 'done',
        error: null,
        pages_total: 2,
        pages_done: 2,
      },
    ],
    ...extra,
  });
  const priceList = {
    id: 'source-prices',
    name: 'Price list',
    kind: 'files',
    status: 'ready',
    current_version: 2,
    latest_version: sourceVersion(2, 'ready', 'prices-2026.pdf'),
    used_by: ['Invoice router'],
    created_at: ago(86_400_000),
    updated_at: ago(3_600_000),
    links: { self: '/v1/sources/source-prices' },
  };
  const handbook = {
    ...priceList,
    id: 'source-handbook',
    name: 'Handbook',
    status: 'indexing',
    current_version: null,
    latest_version: sourceVersion(1, 'indexing', 'handbook.pdf', { progress: { pages_done: 3, pages_total: 12 } }),
    used_by: [],
  };
  app.get('/v1/sources', (_req, res) => res.json({ data: [handbook, priceList], next_cursor: null }));
  app.get('/v1/sources/:id', (req, res) => {
    if (req.params.id !== priceList.id) return problem(res, 404, `no source ${req.params.id} in this workspace`);
    res.json({
      ...priceList,
      versions: [sourceVersion(2, 'ready', 'prices-2026.pdf'), sourceVersion(1, 'archived', 'prices-2025.pdf')],
    });
  });
  app.get('/v1/sources/:id/versions/:version/passages', (req, res) => {
    if (req.params.version !== '1')
      return problem(res, 404, `source "Price list" has no version ${req.params.version}`);
    res.json({
      data: [
        {
          passage_id: '41',
          document: 'prices-2025.pdf',
          page: 1,
          paragraph: 1,
          part: 1,
          text: 'Widgets cost ten euros each.',
          citation_url: '/v1/passages/41',
        },
      ],
      next_cursor: req.query.cursor ? null : '100',
    });
  });
  const uploads: { fields: Record<string, string>; files: { name: string; content: string }[] }[] = [];
  app.post('/v1/sources', (req, res) => {
    if (req.is('application/json')) {
      if (!/^https?:/.test(req.body.url)) return problem(res, 422, 'url: url must be an http or https URL');
      return res.status(202).json({ data: [{ ...handbook, name: req.body.name ?? 'example.com/page' }] });
    }
    const upload: (typeof uploads)[number] = { fields: {}, files: [] };
    const bb = busboy({ headers: req.headers });
    bb.on('field', (name, value) => (upload.fields[name] = value));
    bb.on('file', (_field, stream, info) => {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => upload.files.push({ name: info.filename, content: Buffer.concat(chunks).toString() }));
    });
    bb.on('close', () => {
      uploads.push(upload);
      if (upload.files.some((f) => f.name.endsWith('.exe')))
        return problem(res, 415, 'setup.exe: .exe files cannot be read; upload documents or images');
      const names = upload.fields.name ? [upload.fields.name] : upload.files.map((f) => f.name);
      res.status(202).json({ data: names.map((name) => ({ ...handbook, name })) });
    });
    req.pipe(bb);
  });
  // The page picture is twice the page's size in points, so boxes only land right when scaled.
  const pageSize = { width: 612, height: 792, unit: 'pt' };
  const citedBox = { x: 72, y: 144, width: 300, height: 14 };
  const canvas = createCanvas(pageSize.width * 2, pageSize.height * 2);
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  ctx.fillStyle = '#000';
  ctx.font = '24px sans-serif';
  ctx.fillText('Widgets cost twelve euros each from May.', citedBox.x * 2, (citedBox.y + citedBox.height) * 2);
  const pagePicture = canvas.toBuffer('image/png');
  const citation = {
    id: '42',
    source: { id: priceList.id, name: 'Price list' },
    version: 1,
    version_status: 'archived',
    document: { id: 'doc-1', file_name: 'prices-2025.pdf', format: 'pdf' },
    page: 2,
    paragraph: 3,
    part: 1,
    text: 'Widgets cost twelve euros each from May.',
    boxes: [citedBox],
    words: null,
    ocr_confidence: null,
    page_size: pageSize,
    ocr: false,
    page_image_url: '/v1/passages/42/page-image',
    highlighted_image_url: '/v1/passages/42/page-image?highlight=true',
  };
  app.get('/v1/passages/:id', (req, res) =>
    req.params.id === citation.id ? res.json(citation) : problem(res, 404, `no passage ${req.params.id}`),
  );
  app.get('/v1/passages/:id/page-image', (_req, res) => res.type('image/png').send(pagePicture));
  const retrieved = {
    passage_id: '42',
    source: 'Price list',
    source_id: priceList.id,
    version: 1,
    document: 'prices-2025.pdf',
    page: 2,
    paragraph: 3,
    part: 1,
    text: citation.text,
    boxes: [citedBox],
    page_size: pageSize,
    ocr_confidence: null,
    score: 0.03,
    citation_url: '/v1/passages/42',
  };
  app.get('/v1/runs/:id/source-context', (req, res) =>
    res.json({
      data:
        req.query.item === '0'
          ? [{ item_seq: 0, node_id: 'ask', query: 'widget price', passages: [retrieved], at: ago(50_000) }]
          : [],
      citations:
        req.query.item === '0'
          ? [{ item_seq: 0, node_id: 'ask', passage_id: '42', source: 'Price list', version: 1, page: 2, paragraph: 3 }]
          : [],
      next_cursor: null,
    }),
  );
  return { app, calls, spec, uploads, citedBox, pageSize, pagePicture };
}

/** Serves the built console in a process of its own, so its environment is exactly the one given here. */
function startConsole(apiUrl: string): Promise<{ child: ChildProcess; url: string }> {
  const script = `
    import http from 'node:http';
    const { handler } = await import(process.env.HANDLER_URL);
    const server = http.createServer((req, res) => handler(req, res, () => { res.statusCode = 404; res.end(); }));
    server.listen(0, '127.0.0.1', () => console.log('listening ' + server.address().port));
  `;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    env: {
      PATH: process.env.PATH,
      HANDLER_URL: pathToFileURL(consoleHandlerPath).href,
      CADRE_INTERNAL_API_URL: apiUrl,
      CADRE_CONSOLE_API_KEY: KEY,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return new Promise((resolve, reject) => {
    let output = '';
    const onData = (chunk: Buffer) => {
      output += chunk.toString();
      const port = /listening (\d+)/.exec(output)?.[1];
      if (port) resolve({ child, url: `http://127.0.0.1:${port}` });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`the console exited (code ${code}): ${output}`)));
  });
}

/** The little of playwright-core's API this suite uses, so it type-checks whether or not the package is installed. */
interface BrowserPage {
  on(event: 'pageerror', listener: (error: Error) => void): void;
  on(event: 'console', listener: (message: { type(): string; text(): string }) => void): void;
  on(event: 'request', listener: (request: { url(): string }) => void): void;
  goto(url: string): Promise<unknown>;
  click(selector: string): Promise<void>;
  waitForURL(url: string): Promise<void>;
  waitForTimeout(ms: number): Promise<void>;
  waitForSelector(selector: string): Promise<unknown>;
  waitForFunction(expression: string): Promise<unknown>;
  evaluate<T>(expression: string): Promise<T>;
  fill(selector: string, value: string): Promise<void>;
  selectOption(selector: string, value: string): Promise<unknown>;
  inputValue(selector: string): Promise<string>;
  innerText(selector: string): Promise<string>;
}
interface Playwright {
  chromium: {
    launch(options: object): Promise<{ newPage(options?: object): Promise<BrowserPage>; close(): Promise<void> }>;
  };
}

function text(html: string): string {
  return html
    .replace(/<script[\s\S]*?<\/script>|<style[\s\S]*?<\/style>|<!--[\s\S]*?-->/g, ' ')
    .replace(/<[^>]+>/g, ' ')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&')
    .replace(/\s+/g, ' ');
}

describe('console (ui/) against a contract-shaped fake API', function () {
  this.timeout(180_000);

  const api = fakeApi();
  let apiServer: ReturnType<typeof api.app.listen>;
  let consoleProcess: ChildProcess | undefined;
  let base = '';

  before(async function () {
    // Always from the current sources: a stale ui/build would test yesterday's console.
    buildConsole(); // once per test process: the browser suites share it

    apiServer = api.app.listen(0, '127.0.0.1');
    await new Promise((resolve) => apiServer.once('listening', resolve));
    const { port } = apiServer.address() as AddressInfo;
    const started = await startConsole(`http://127.0.0.1:${port}`);
    consoleProcess = started.child;
    base = started.url;
  });

  after(async () => {
    consoleProcess?.kill();
    await new Promise((resolve) => apiServer?.close(resolve));
  });

  const get = (p: string) => fetch(base + p, { redirect: 'manual', headers: { accept: 'text/html' } });
  /** A form post as a browser without JavaScript sends it. */
  const post = (p: string, fields: Record<string, string>, origin = base) =>
    fetch(base + p, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin, accept: 'text/html', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
  const callsTo = (method: string, prefix: string) =>
    api.calls.filter((c) => c.method === method && c.path.startsWith(prefix));

  it('sends / to the agents list, which shows each agent with its state and last run', async () => {
    const root = await get('/');
    assert.equal(root.status, 307);
    assert.equal(root.headers.get('location'), '/agents');

    const page = await get('/agents');
    assert.equal(page.status, 200);
    const html = await page.text();
    assert.match(html, /href="\/agents\/agent-live"/);
    assert.match(text(html), /Invoice router v3 .*Live .*Needs review .*42/);
    assert.match(text(html), /Draft helper .*Draft .*Never run/);
  });

  it('shows an agent: instructions, nodes in order with where each leads, and the moves its state allows', async () => {
    const page = text(await (await get('/agents/agent-live')).text());
    assert.match(page, /Pay small invoices/);
    assert.match(page, /1 input rows .*2 branch route .*if amount > 1000 → pay .*otherwise → report .*3 tool pay/);
    assert.match(page, /Pause/);
    assert.doesNotMatch(page, /Mark ready|Go live/);
    assert.match(page, /Recent runs/);
  });

  it('shows an agent’s triggers with their next fire times, and its activity timeline', async () => {
    const page = text(await (await get('/agents/agent-live')).text());
    assert.match(page, /Schedule every weekday at 09:00, Europe\/Berlin .*Run now .*skip the new fire/);
    assert.match(page, /Webhook Webhook .*POST http:\/\/cadre\.test\/v1\/hooks\/trigger-hook/);
    assert.match(page, /delivery msg_1 received again, skipped \(duplicate\) .*started a run/);
    assert.match(page, /State store .*paid_total 1234\.5 7/);
    // A kept list of records in words, not JSON.
    assert.match(page, /ledger \(payee: Acme, amount: 250\) 2/);
    await post('/agents/agent-live?/deleteState', { key: 'paid_total' });
    assert.equal(callsTo('DELETE', '/v1/agents/agent-live/state-store/paid_total').length, 1);
  });

  it('previews a schedule from the builder, then adds it', async () => {
    const fields = { type: 'daily', at: '06:30', timezone: 'UTC', overlap: 'skip', catchup: '300' };
    const preview = text(await (await post('/agents/agent-live?/previewSchedule', fields)).text());
    assert.match(preview, /every day at 06:30, UTC/);
    const expected = {
      schedule: { type: 'daily', at: '06:30' },
      timezone: 'UTC',
      overlap: 'skip',
      catchup_window_seconds: 300,
    };
    assert.deepEqual(callsTo('POST', '/v1/schedules/preview').at(-1)?.body, expected);
    await post('/agents/agent-live?/addSchedule', fields);
    assert.deepEqual(callsTo('POST', '/v1/agents/agent-live/triggers').at(-1)?.body, { kind: 'schedule', ...expected });
  });

  it('sends a schedule’s input with its format, and shows the builder as it was typed after a preview', async () => {
    const fields = {
      type: 'cron',
      expression: '0 9 13 * 5',
      timezone: 'Asia/Tokyo',
      overlap: 'buffer_one',
      catchup: '600',
      input_format: 'csv',
      input: 'id,name\n1,Ada\n',
    };
    const html = await (await post('/agents/agent-live?/previewSchedule', fields)).text();
    const expected = {
      schedule: { type: 'cron', expression: '0 9 13 * 5' },
      timezone: 'Asia/Tokyo',
      overlap: 'buffer_one',
      catchup_window_seconds: 600,
      input: 'id,name\n1,Ada\n',
      input_format: 'csv',
    };
    assert.deepEqual(callsTo('POST', '/v1/schedules/preview').at(-1)?.body, expected);
    assert.match(html, /id="s-cron"[^>]*value="0 9 13 \* 5"/);
    assert.match(html, /id="s-tz"[^>]*value="Asia\/Tokyo"/);
    assert.match(html, /<option value="buffer_one" selected/);
    assert.match(html, /<option value="csv" selected/);
    assert.match(html, /<textarea[^>]*id="s-input"[^>]*>id,name\s+1,Ada\s*<\/textarea>/);
    await post('/agents/agent-live?/addSchedule', fields);
    assert.deepEqual(callsTo('POST', '/v1/agents/agent-live/triggers').at(-1)?.body, { kind: 'schedule', ...expected });
    // "None" sends no input: each run is then one empty item.
    await post('/agents/agent-live?/addSchedule', { ...fields, input_format: 'none' });
    const { input: _typed, input_format: _format, ...withoutInput } = expected;
    assert.deepEqual(callsTo('POST', '/v1/agents/agent-live/triggers').at(-1)?.body, {
      kind: 'schedule',
      ...withoutInput,
    });
  });

  it('publishes a form from the builder’s lines', async () => {
    await post('/agents/agent-live?/addForm', {
      title: 'Expense claim',
      fields: 'Your email, email, required\nCategory, select: travel / meals\n2nd note',
    });
    assert.deepEqual(callsTo('POST', '/v1/agents/agent-live/triggers').at(-1)?.body, {
      kind: 'form',
      title: 'Expense claim',
      fields: [
        { name: 'your_email', label: 'Your email', type: 'email', required: true },
        { name: 'category', label: 'Category', type: 'select', required: false, options: ['travel', 'meals'] },
        { name: 'f_2nd_note', label: '2nd note', type: 'text', required: false },
      ],
    });
  });

  it('serves a form trigger’s public page without the console, with errors next to their field', async () => {
    const html = await (await get('/forms/form-1')).text();
    const page = text(html);
    assert.match(page, /Expense claim .*Claim back what you spent\. .*Your email \* .*Category .*Send claim/);
    assert.doesNotMatch(page, /Approvals|Agents/, 'nothing of the workspace is shown');

    const bad = await post('/forms/form-1', { email: 'nope', category: 'meals' });
    assert.equal(bad.status, 422);
    const badHtml = await bad.text();
    assert.match(badHtml, /id="e-email"[^>]*>Your email must be an email address/);
    assert.match(badHtml, /<option value="meals" selected/);

    const good = await post('/forms/form-1', { email: 'ana@example.com', category: 'travel' });
    assert.equal(good.status, 200);
    assert.match(text(await good.text()), /Thank you, your submission was received/);
    const sent = callsTo('POST', '/v1/forms/form-1/submissions').at(-1)!;
    assert.deepEqual(sent.body, { email: 'ana@example.com', category: 'travel' });
    assert.ok(sent.forwardedFor, 'the client address is forwarded for per-person rate limits');
  });

  it('draws the dashboard from the daily figures, with totals for the chosen range', async () => {
    const html = await (await get('/dashboard?days=7')).text();
    const page = text(html);
    assert.match(page, /Runs 18 .*Completed 67% .*Items processed 720 .*Items failed 42 .*Model cost \$2\.52/);
    assert.ok(api.calls.some((c) => c.path === '/v1/stats/daily?days=7'));
    assert.equal((html.match(/<svg[^>]*role="img"/g) ?? []).length, 4, 'four charts');
    assert.match(html, /<title>[\d-]+: completed 2<\/title>/);
  });

  it('creates, imports, duplicates and exports agents from the agents list', async () => {
    const created = await post('/agents?/create', { name: 'Expense checker', description: 'Checks claims' });
    assert.equal(created.status, 303);
    assert.equal(created.headers.get('location'), '/agents/agent-new/edit');
    const body = callsTo('POST', '/v1/agents').find((c) => c.path === '/v1/agents')!.body as {
      name: string;
      nodes: unknown[];
    };
    assert.equal(body.name, 'Expense checker');
    assert.equal(body.nodes.length, 2);

    // Named as the workspace's "Invoice router": asked once (the API is not called), then imported when confirmed.
    const importsBefore = callsTo('POST', '/v1/agents/import').length;
    const asked = await post('/agents?/import', { json: JSON.stringify(api.spec) });
    assert.equal(asked.status, 409);
    assert.match(text(await asked.text()), /An agent named “Invoice router” already exists/);
    assert.equal(callsTo('POST', '/v1/agents/import').length, importsBefore);
    const imported = await post('/agents?/import', { json: JSON.stringify(api.spec), same_name_ok: 'on' });
    assert.equal(imported.headers.get('location'), '/agents/agent-imported');
    const refused = await post('/agents?/import', { json: '{"name": "x"}' });
    assert.equal(refused.status, 422);
    assert.match(text(await refused.text()), /nodes: Invalid input/);
    const notJson = await post('/agents?/import', { json: 'hello' });
    assert.equal(notJson.status, 400);

    const copy = await post('/agents?/duplicate', { agent_id: 'agent-live' });
    assert.equal(copy.headers.get('location'), '/agents/agent-copy');

    const file = await get('/agents/agent-live/export');
    assert.match(file.headers.get('content-disposition') ?? '', /attachment; filename="?Invoice-router\.json/);
    assert.equal(((await file.json()) as { name: string }).name, 'Invoice router');
  });

  it('edits an agent in Operator Mode: tools with their approval policy, save as a new version', async () => {
    const page = text(await (await get('/agents/agent-live/edit')).text());
    assert.match(page, /Save version 4/);
    assert.match(page, /http\.request Call a JSON\/REST endpoint\. other systems as usual \(does not ask\)/);
    assert.match(page, /Pay small invoices; a person approves large ones\./);

    const edited = {
      ...api.spec,
      instructions: 'Pay every invoice under 500.',
      policy: { approvals: { 'http.request': { mode: 'always' } } },
    };
    const saved = await post('/agents/agent-live/edit?/save', { spec: JSON.stringify(edited) });
    assert.equal(saved.status, 303);
    assert.equal(saved.headers.get('location'), '/agents/agent-live?saved=4');
    assert.deepEqual(callsTo('PUT', '/v1/agents/agent-live').at(-1)?.body, edited);

    const refused = await post('/agents/agent-live/edit?/save', { spec: JSON.stringify({ ...edited, name: '' }) });
    assert.equal(refused.status, 422);
    const html = await refused.text();
    assert.match(text(html), /name: Too small/);
    assert.match(html, /Pay every invoice under 500\./, 'what was typed is kept');
  });

  it('shows the version history with the changes between two versions, and restores one', async () => {
    const page = text(await (await get('/agents/agent-live/versions?from=1&to=3')).text());
    assert.match(page, /v3 current .*v2 .*Restore .*v1/);
    assert.match(page, /Changes from v1 to v3 .*Instructions Pay every invoice\. Pay small invoices/);
    assert.ok(api.calls.some((c) => c.path === '/v1/agents/agent-live/diff?from=1&to=3'));
    const restored = text(
      await (await post('/agents/agent-live/versions?/restore', { version: '1', base_version: '3' })).text(),
    );
    assert.match(restored, /Version 1 restored as version 4/);
    // Over the newest version the page showed only: one saved meanwhile is not overwritten unseen.
    assert.equal(callsTo('POST', '/v1/agents/agent-live/versions/1/restore?base_version=3').length, 1);
  });

  it('shows the API’s reason when it refuses a state change', async () => {
    const response = await post('/agents/agent-draft?/state', { state: 'ready' });
    assert.equal(response.status, 409);
    assert.match(text(await response.text()), /version 3 has no successful test run yet/);
    assert.deepEqual(callsTo('POST', '/v1/agents/agent-draft/state').at(-1)?.body, { state: 'ready' });
  });

  it('runs a live agent for real and a draft as a test, then opens the new run', async () => {
    const live = await post('/agents/agent-live?/run', { input: 'amount\n7\n' });
    assert.equal(live.status, 303);
    assert.equal(live.headers.get('location'), '/runs/new-manual-run');
    assert.deepEqual(callsTo('POST', '/v1/agents/agent-live/manual-run').at(-1)?.body, { input: 'amount\n7\n' });

    const draft = await post('/agents/agent-draft?/run', { input: 'x' });
    assert.equal(draft.headers.get('location'), '/runs/new-test-run');
    assert.equal(callsTo('POST', '/v1/agents/agent-draft/test-run').length, 1);
  });

  it('filters runs by status through the API', async () => {
    const page = text(await (await get('/runs?status=failed')).text());
    assert.ok(api.calls.some((c) => c.path.startsWith('/v1/runs?') && c.path.includes('status=failed')));
    assert.match(page, /Failed .*Invoice router .*Schedule/);
  });

  it('filters runs by agent and trigger too, keeping the status', async () => {
    const html = await (await get('/runs?status=failed&agent_id=agent-live&trigger=schedule')).text();
    const sent = api.calls.filter((c) => c.path.startsWith('/v1/runs?')).at(-1)!.path;
    assert.match(sent, /status=failed/);
    assert.match(sent, /agent_id=agent-live/);
    assert.match(sent, /trigger=schedule/);
    assert.match(html, /<option value="agent-live" selected/);
    assert.match(html, /<option value="schedule" selected/);
  });

  it('shows a run: progress, approvals to decide, node activity, outputs, files, items and log', async () => {
    const html = await (await get('/runs/11111111-1111-4111-8111-111111111111')).text();
    const page = text(html);
    assert.match(page, /2 of 3 items finished/);
    assert.match(page, /Cancel run/);
    assert.match(page, /Call webhook\.post at node pay , item 3 .*Amount above 1000 .*Approve .*Reject/);
    assert.match(page, /paid_total/);
    assert.match(page, /amount is missing/);
    assert.match(page, /split into 3 items/);
    assert.match(html, /href="http:\/\/temporal\.test\/workflows\/run-1111"/);
    assert.match(html, /href="\/runs\/11111111-1111-4111-8111-111111111111\/files\/file-1"/);
  });

  it('shows why a run failed, and no cancel button once it has ended', async () => {
    const page = text(await (await get('/runs/22222222-2222-4222-8222-222222222222')).text());
    assert.match(page, /The run failed no model configured: set ANTHROPIC_API_KEY/);
    assert.doesNotMatch(page, /Cancel run/);
  });

  it('shows an approval approved with edits, with what the reviewer changed', async () => {
    const page = text(await (await get('/runs/22222222-2222-4222-8222-222222222222')).text());
    assert.match(page, /Pay 4200 to Globex\? .*Approved with edits by ann@example\.test .*amount 4200 → 4000/);
    assert.doesNotMatch(page, /vendor Globex →/, 'only what changed');
  });

  it('streams a run file through the console, which holds the API key', async () => {
    const response = await get('/runs/11111111-1111-4111-8111-111111111111/files/file-1');
    assert.equal(response.status, 200);
    assert.match(response.headers.get('content-disposition') ?? '', /attachment; filename="?report\.csv/);
    assert.equal(await response.text(), 'a,b\n1,2\n');
  });

  it('sends approve and reject decisions, and lists pending approvals oldest first', async () => {
    const page = text(await (await get('/approvals')).text());
    assert.match(page, /Invoice router · run 11111111 .*Approve/);

    await post('/approvals?/decide', { approval_id: 'approval-1', decision: 'approve', comment: 'fine' });
    await post('/runs/11111111-1111-4111-8111-111111111111?/decide', {
      approval_id: 'approval-1',
      decision: 'reject',
    });
    const decisions = callsTo('POST', '/v1/approvals/approval-1/decision').map((c) => c.body);
    assert.deepEqual(decisions, [{ decision: 'approve', comment: 'fine' }, { decision: 'reject' }]);
  });

  it('approves with edited arguments, and refuses edits that are not JSON', async () => {
    const page = await (await get('/runs/11111111-1111-4111-8111-111111111111')).text();
    assert.match(text(page), /Edit and approve .*Arguments to run with/);
    await post('/approvals?/decide', {
      approval_id: 'approval-1',
      decision: 'approve_with_edits',
      arguments: '{"amount": 4000}',
    });
    assert.deepEqual(callsTo('POST', '/v1/approvals/approval-1/decision').at(-1)?.body, {
      decision: 'approve_with_edits',
      arguments: { amount: 4000 },
    });
    const decisions = callsTo('POST', '/v1/approvals/approval-1/decision').length;
    const bad = await post('/approvals?/decide', {
      approval_id: 'approval-1',
      decision: 'approve_with_edits',
      arguments: '{amount',
    });
    assert.equal(bad.status, 400);
    assert.match(text(await bad.text()), /not valid JSON/);
    assert.equal(callsTo('POST', '/v1/approvals/approval-1/decision').length, decisions, 'nothing sent');
  });

  it('refuses form posts from another site without calling the API', async () => {
    const before = api.calls.length;
    const response = await post('/runs/11111111-1111-4111-8111-111111111111?/cancel', {}, 'http://evil.test');
    assert.equal(response.status, 403);
    assert.equal(api.calls.length, before);
  });

  it('turns an API 404 into a not-found page carrying the API’s detail', async () => {
    const response = await get('/runs/33333333-3333-4333-8333-333333333333');
    assert.equal(response.status, 404);
    assert.match(text(await response.text()), /no run 33333333-3333-4333-8333-333333333333 in this workspace/);
  });

  it('lists sources with their status, indexing progress, current version and the agents using them', async () => {
    const page = text(await (await get('/sources')).text());
    assert.match(page, /Handbook handbook\.pdf Indexing 3 \/ 12 pages — v1 indexing/);
    assert.match(page, /Price list prices-2026\.pdf Ready 2 \/ 2 pages v2 6 Invoice router/);
    assert.match(await (await get('/agents')).text(), /href="\/sources"/, 'a nav entry');
  });

  it('uploads several files at once, named or one source per file, and shows the API’s refusal', async () => {
    const upload = (files: [string, string][], fields: Record<string, string> = {}) => {
      const form = new FormData();
      for (const [k, v] of Object.entries(fields)) form.append(k, v);
      for (const [name, content] of files) form.append('files', new Blob([content]), name);
      return fetch(`${base}/sources?/upload`, {
        method: 'POST',
        redirect: 'manual',
        headers: { origin: base, accept: 'text/html' },
        body: form,
      });
    };
    const two = await upload([
      ['a.txt', 'alpha'],
      ['b.md', '# beta'],
    ]);
    assert.equal(two.status, 200);
    assert.match(text(await two.text()), /2 sources added \(a\.txt, b\.md\): they are being indexed/);
    assert.deepEqual(api.uploads.at(-1), {
      fields: {},
      files: [
        { name: 'a.txt', content: 'alpha' },
        { name: 'b.md', content: '# beta' },
      ],
    });

    const named = await upload([['prices.pdf', '%PDF']], { name: 'Price list' });
    assert.match(text(await named.text()), /“Price list” added: it is being indexed/);
    assert.equal(api.uploads.at(-1)!.fields.name, 'Price list');

    const refused = await upload([['setup.exe', 'MZ']]);
    assert.equal(refused.status, 415);
    assert.match(text(await refused.text()), /setup\.exe: \.exe files cannot be read/);

    const none = await upload([]);
    assert.equal(none.status, 400);
    assert.match(text(await none.text()), /Choose one or more files/);
  });

  it('adds a web page by URL', async () => {
    const added = await post('/sources?/url', { url: 'https://example.com/handbook', name: 'Travel' });
    assert.match(text(await added.text()), /“Travel” added/);
    assert.deepEqual(callsTo('POST', '/v1/sources').at(-1)?.body, {
      url: 'https://example.com/handbook',
      name: 'Travel',
    });
    const bad = await post('/sources?/url', { url: 'ftp://example.com/x' });
    assert.equal(bad.status, 422);
    assert.match(text(await bad.text()), /url must be an http or https URL/);
  });

  it('shows a source’s version history, the archived version included', async () => {
    const page = text(await (await get('/sources/source-prices')).text());
    assert.match(page, /Agents use version 2/);
    assert.match(
      page,
      /Version 2 Ready in use Read its passages .*prices-2026\.pdf .*Version 1 Archived Read its passages .*prices-2025\.pdf/,
    );
    const archived = await (await get('/sources/source-prices/versions/1')).text();
    assert.match(
      text(archived),
      /Version 1 Archived prices-2025\.pdf · 6 passages, as indexed prices-2025\.pdf, page 1, paragraph 1 Widgets cost ten euros each\./,
    );
    assert.match(archived, /href="\/citations\/41"/);
    assert.match(archived, /href="\/sources\/source-prices\/versions\/1\?cursor=100"/);
    assert.ok(api.calls.some((c) => c.path === '/v1/sources/source-prices/versions/1/passages?limit=100'));
  });

  it('opens a citation: source, version, page and paragraph, the page picture and its highlight boxes', async () => {
    const html = await (await get('/citations/42?run=11111111-1111-4111-8111-111111111111&item=0')).text();
    const page = text(html);
    assert.match(page, /Run 11111111 , item 1/);
    assert.match(page, /Source Price list Version v1 Document prices-2025\.pdf Page 2 Paragraph 3/);
    assert.match(page, /Widgets cost twelve euros each from May\./);
    assert.match(html, /<img src="\/citations\/42\/page-image"/);
    // 72 of 612 points from the left, 144 of 792 from the top: percentages of the picture, whatever its size
    assert.match(
      html,
      /class="highlight[^"]*" style="left: 11\.7647%; top: 18\.1818%; width: 49\.0196%; height: 1\.7677%;/,
    );

    const picture = await get('/citations/42/page-image');
    assert.equal(picture.status, 200);
    assert.equal(picture.headers.get('content-type'), 'image/png');
    assert.ok(Buffer.from(await picture.arrayBuffer()).equals(api.pagePicture), 'the picture passes through as is');
    assert.equal((await get('/citations/7')).status, 404);
  });

  it('serves an item’s source context for the run page', async () => {
    const res = await get('/runs/11111111-1111-4111-8111-111111111111/source-context?item=0');
    const body = (await res.json()) as { data: { passages: { passage_id: string }[] }[]; citations: unknown[] };
    assert.equal(body.data[0].passages[0].passage_id, '42');
    assert.equal(body.citations.length, 1);
    assert.equal((await get('/runs/11111111-1111-4111-8111-111111111111/source-context?item=x')).status, 400);
  });

  describe('in a browser', function () {
    // Loaded by name at run time: the suite above needs no browser, and this part says plainly when it cannot run.
    let playwright: Playwright | undefined;

    before(async function () {
      const moduleName = 'playwright-core';
      try {
        playwright = await import(moduleName);
      } catch {
        playwright = undefined;
      }
      if (!playwright || !fs.existsSync(chromiumPath)) {
        console.log(`    (skipped: needs playwright-core and ${chromiumPath})`);
        this.skip();
      }
    });

    it('hydrates without errors, polls a running run, and decides an approval with its button', async () => {
      const browser = await playwright!.chromium.launch({
        executablePath: chromiumPath,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--no-first-run',
        ],
      });
      try {
        const page = await browser.newPage();
        const problems: string[] = [];
        page.on('pageerror', (e) => problems.push(e.message));
        page.on('console', (m) => {
          if (m.type() === 'error') problems.push(m.text());
        });
        let refreshes = 0;
        page.on('request', (r) => {
          if (r.url().includes('__data.json')) refreshes++;
        });

        await page.goto(`${base}/agents`);
        await page.click('text=Invoice router');
        await page.waitForURL(`${base}/agents/agent-live`);

        await page.goto(`${base}/runs/11111111-1111-4111-8111-111111111111`);
        refreshes = 0;
        await page.waitForTimeout(4500);
        assert.ok(refreshes >= 1, 'a needs_review run reloads its data every 2 s');

        await page.click('button:has-text("Approve")');
        await page.waitForSelector('.notice');

        // An item's reasoning as steps in words: what the model wrote, the call with its values, the answer's values.
        await page.click('.viewport .row[aria-rowindex="1"]');
        const reasoning = await page.innerText('ol.reasoning');
        assert.match(reasoning, /The amount is small; paying it\./);
        assert.match(reasoning, /Called webhook\.post with\s+amount\s+5\s+meta\s+source\s+csv/);
        assert.match(reasoning, /webhook\.post answered\s+status\s+200\s+body\s+ok\s+yes/);
        assert.doesNotMatch(reasoning, /[{}[\]"]/);
        assert.deepEqual(problems, []);
      } finally {
        await browser.close();
      }
    });
    it('starts the schedule builder in the browser’s time zone and keeps what was typed after Preview', async () => {
      const browser = await playwright!.chromium.launch({
        executablePath: chromiumPath,
        args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'],
      });
      try {
        const page = await browser.newPage({ timezoneId: 'America/Sao_Paulo' });
        const problems: string[] = [];
        page.on('pageerror', (e) => problems.push(e.message));
        await page.goto(`${base}/agents/agent-live`);
        await page.click('summary:has-text("Add a schedule")');
        await page.waitForFunction(
          "document.querySelector('#s-tz')?.value === 'America/Sao_Paulo'", // the browser's zone, not the server's
        );
        await page.selectOption('#s-type', 'cron');
        await page.fill('#s-cron', '30 2 26-30 3 *');
        await page.selectOption('#s-input-format', 'json');
        await page.fill('#s-input', '[{"report": "weekly"}]');
        await page.click('button:has-text("Preview")');
        await page.waitForSelector('.preview');
        assert.equal(await page.inputValue('#s-cron'), '30 2 26-30 3 *');
        assert.equal(await page.inputValue('#s-input-format'), 'json');
        assert.equal(await page.inputValue('#s-input'), '[{"report": "weekly"}]');
        assert.equal(await page.inputValue('#s-tz'), 'America/Sao_Paulo');
        assert.deepEqual(callsTo('POST', '/v1/schedules/preview').at(-1)?.body, {
          schedule: { type: 'cron', expression: '30 2 26-30 3 *' },
          timezone: 'America/Sao_Paulo',
          overlap: 'skip',
          catchup_window_seconds: 300,
          input: '[{"report": "weekly"}]',
          input_format: 'json',
        });
        assert.deepEqual(problems, []);
      } finally {
        await browser.close();
      }
    });

    it('opens a cited passage from a run’s item and highlights its text over the page picture', async () => {
      const browser = await playwright!.chromium.launch({
        executablePath: chromiumPath,
        args: [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--disable-background-networking',
          '--disable-component-update',
          '--disable-sync',
          '--no-first-run',
        ],
      });
      try {
        const page = await browser.newPage();
        const problems: string[] = [];
        page.on('pageerror', (e) => problems.push(e.message));
        await page.goto(`${base}/runs/11111111-1111-4111-8111-111111111111`);
        await page.click('[role="row"][aria-rowindex="1"]');
        await page.waitForSelector('a.citation-link');
        await page.click('a.citation-link');
        await page.waitForURL(`${base}/citations/42?run=11111111-1111-4111-8111-111111111111&item=0`);
        // the picture has loaded and has its size on the page
        // (page code as strings: this file is type-checked without the DOM library)
        await page.waitForFunction(
          "(() => { const img = document.querySelector('img.page-picture'); return !!img && img.complete && img.naturalWidth > 0; })()",
        );
        type Rect = { x: number; y: number; width: number; height: number };
        const [img, box] = await page.evaluate<Rect[]>(
          "['img.page-picture', '.highlight'].map((sel) => { const r = document.querySelector(sel).getBoundingClientRect(); return { x: r.x, y: r.y, width: r.width, height: r.height }; })",
        );
        assert.ok(img.width > 100, `the picture is shown (${img.width} px wide)`);
        const k = img.width / api.pageSize.width;
        const expected = {
          x: img.x + api.citedBox.x * k,
          y: img.y + api.citedBox.y * k,
          width: api.citedBox.width * k,
          height: api.citedBox.height * k,
        };
        for (const side of ['x', 'y', 'width', 'height'] as const)
          assert.ok(Math.abs(box[side] - expected[side]) < 1.5, `${side}: ${box[side]} vs ${expected[side]}`);
        assert.deepEqual(problems, []);
      } finally {
        await browser.close();
      }
    });
  });
});
