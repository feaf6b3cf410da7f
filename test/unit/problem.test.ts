// sendProblem / problemHandler: RFC 9457 problem details over real HTTP from a throwaway express app.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import express from 'express';
import { Client, Connection } from '@temporalio/client';
import knex from 'knex';
import { freePort } from '../support/ports';
import { ApiError, problemHandler, sendProblem } from '../../api/problem';

describe('problem details', () => {
  let server: Server;
  let base: string;

  before(async () => {
    const app = express();
    app.get('/rate-limited', (_req, res) => {
      sendProblem(
        res,
        new ApiError(429, 'rate_limited', 'too many runs; wait a minute', { 'Retry-After': '60' }, { limit: 10 }),
      );
    });
    app.get('/not-found', (_req, res) => {
      sendProblem(res, new ApiError(404, 'agent_not_found', 'no agent with id "x"'));
    });
    app.get('/teapot', (_req, res) => {
      sendProblem(res, new ApiError(418, 'teapot', 'short and stout'));
    });
    app.get('/thrown', () => {
      throw new ApiError(409, 'conflict', 'already running');
    });
    app.get('/boom', () => {
      throw new Error('secret internals at /srv/x.ts:12');
    });
    // A database and a Temporal that are down (a port nothing listens on), reached with the real clients.
    const closedPort = await freePort();
    app.get('/database-down', async () => {
      const db = knex({ client: 'pg', connection: `postgres://cadre@127.0.0.1:${closedPort}/cadre`, pool: { min: 0 } });
      try {
        await db.raw('select 1');
      } finally {
        await db.destroy();
      }
    });
    app.get('/temporal-down', async () => {
      const connection = Connection.lazy({ address: `127.0.0.1:${closedPort}` });
      try {
        await new Client({ connection }).workflow.start('agentRun', { taskQueue: 'cadre', workflowId: 'run-x' });
      } finally {
        await connection.close();
      }
    });
    app.post('/json', express.json(), (_req, res) => {
      res.json({ ok: true });
    });
    app.use(problemHandler);
    await new Promise<void>((resolve) => {
      server = app.listen(0, '127.0.0.1', () => resolve());
    });
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  after(async () => {
    await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
  });

  it('sends status, problem+json content type, the standard fields, extra fields and extra headers', async () => {
    const res = await fetch(`${base}/rate-limited`);
    assert.equal(res.status, 429);
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json(; charset=utf-8)?$/);
    assert.equal(res.headers.get('retry-after'), '60');
    assert.deepEqual(await res.json(), {
      type: 'https://cadre.dev/problems/rate_limited',
      title: 'Too Many Requests',
      status: 429,
      code: 'rate_limited',
      detail: 'too many runs; wait a minute',
      limit: 10,
    });
  });

  it('uses the status title for known statuses', async () => {
    const res = await fetch(`${base}/not-found`);
    assert.equal(res.status, 404);
    assert.deepEqual(await res.json(), {
      type: 'https://cadre.dev/problems/agent_not_found',
      title: 'Not Found',
      status: 404,
      code: 'agent_not_found',
      detail: 'no agent with id "x"',
    });
  });

  it('falls back to the title "Error" for other statuses', async () => {
    const res = await fetch(`${base}/teapot`);
    assert.equal(res.status, 418);
    const body = (await res.json()) as Record<string, string>;
    assert.equal(body.title, 'Error');
    assert.equal(body.code, 'teapot');
  });

  it('problemHandler sends a thrown ApiError as a problem', async () => {
    const res = await fetch(`${base}/thrown`);
    assert.equal(res.status, 409);
    assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.deepEqual(await res.json(), {
      type: 'https://cadre.dev/problems/conflict',
      title: 'Conflict',
      status: 409,
      code: 'conflict',
      detail: 'already running',
    });
  });

  it('problemHandler maps malformed JSON bodies to 400 malformed_json', async () => {
    const res = await fetch(`${base}/json`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":',
    });
    assert.equal(res.status, 400);
    const body = (await res.json()) as Record<string, string>;
    assert.equal(body.code, 'malformed_json');
    assert.equal(body.title, 'Bad Request');
    assert.match(body.detail, /^the request body is not valid JSON: /);
  });

  it('problemHandler hides unexpected errors behind a 500 without the message or a stack', async () => {
    const res = await fetch(`${base}/boom`);
    assert.equal(res.status, 500);
    const text = await res.text();
    assert.ok(!text.includes('secret internals'), text);
    assert.ok(!text.includes('.ts:'), text);
    assert.deepEqual(JSON.parse(text), {
      type: 'https://cadre.dev/problems/internal_error',
      title: 'Internal Server Error',
      status: 500,
      code: 'internal_error',
      detail: 'something went wrong on our side; the request id in the X-Request-Id header helps us find it',
    });
  });

  for (const backing of ['database', 'temporal']) {
    it(`a ${backing} that cannot be reached answers 503 with Retry-After, not 500`, async () => {
      const res = await fetch(`${base}/${backing}-down`);
      assert.equal(res.status, 503);
      assert.equal(res.headers.get('retry-after'), '5');
      const body = (await res.json()) as Record<string, string>;
      assert.equal(body.code, 'service_unavailable');
      assert.match(body.detail, /try again in a few seconds/);
    });
  }
});
