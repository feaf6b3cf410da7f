// Radicale (PyPI, in .tools/pyservers), a real CalDAV server, for the calendar connector's tests: started on a free
// port with its collections in a throwaway directory and one htpasswd user, stopped and removed after. Calendars
// are made with MKCALENDAR through tsdav, and the tests read what a run wrote the same way. Also a proxy that can
// lose the server's answer to one request after the server acted on it, as a dropped connection would.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { DAVClient } from 'tsdav';
import { tcpOpen, waitFor } from '../../scripts/supervisor';
import { freePort } from './ports';

const radicaleBin = path.resolve(__dirname, '../../.tools/pyservers/bin/radicale');

export interface CalendarObject {
  href: string;
  etag: string;
  data: string;
}

export interface RadicaleServer {
  /** The server's root, as a connection's server_url. */
  url: string;
  username: string;
  password: string;
  /** Makes a calendar for events (MKCALENDAR) and answers its URL. */
  makeCalendar(slug: string, displayName: string): Promise<string>;
  /** Stores an iCalendar object as another calendar app would. */
  put(calendarUrl: string, name: string, ics: string): Promise<void>;
  /** Every object of the calendar, with its data. */
  objects(calendarUrl: string): Promise<CalendarObject[]>;
  stop(): Promise<void>;
}

export async function startRadicale(): Promise<RadicaleServer> {
  if (!fs.existsSync(radicaleBin))
    throw new Error(
      `Radicale is not installed at ${radicaleBin}: install it into .tools/pyservers (pip install radicale)`,
    );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cadre-radicale-'));
  const username = 'alice';
  const password = 'radicale-pass-7c1e90';
  fs.writeFileSync(path.join(dir, 'users'), `${username}:${password}\n`);
  const port = await freePort();
  const child = spawn(
    radicaleBin,
    [
      '--config',
      '', // no system or user configuration files
      '--server-hosts',
      `127.0.0.1:${port}`,
      '--storage-filesystem-folder',
      path.join(dir, 'collections'),
      '--auth-type',
      'htpasswd',
      '--auth-htpasswd-filename',
      path.join(dir, 'users'),
      '--auth-htpasswd-encryption',
      'plain',
      '--logging-level',
      'warning',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<never>((_, reject) =>
    child.once('exit', (code) => reject(new Error(`Radicale exited (${code}) before it was ready:\n${stderr}`))),
  );
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const gone = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await Promise.race([gone, new Promise((r) => setTimeout(r, 10_000))]);
      child.kill('SIGKILL');
    }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await Promise.race([waitFor('Radicale', () => tcpOpen(port), 30_000), exited]);
  } catch (err) {
    await stop();
    throw err;
  }
  exited.catch(() => undefined); // from here on an exit is the test's business

  const url = `http://127.0.0.1:${port}/`;
  const client = new DAVClient({
    serverUrl: url,
    credentials: { username, password },
    authMethod: 'Basic',
    defaultAccountType: 'caldav',
  });
  await client.login();

  return {
    url,
    username,
    password,
    async makeCalendar(slug, displayName) {
      const calendarUrl = new URL(`/${username}/${slug}/`, url).href;
      const [made] = await client.makeCalendar({
        url: calendarUrl,
        props: {
          displayname: displayName,
          'c:supported-calendar-component-set': { 'c:comp': { _attributes: { name: 'VEVENT' } } },
        },
      });
      if (!made?.ok)
        throw new Error(`MKCALENDAR ${calendarUrl} answered ${made?.status}: ${JSON.stringify(made?.raw)}`);
      return calendarUrl;
    },
    async put(calendarUrl, name, ics) {
      const res = await client.createObject({
        url: new URL(name, calendarUrl).href,
        data: ics,
        headers: { 'content-type': 'text/calendar; charset=utf-8' },
      });
      if (!res.ok) throw new Error(`PUT ${name} answered ${res.status}: ${await res.text()}`);
    },
    async objects(calendarUrl) {
      const found = await client.fetchCalendarObjects({ calendar: { url: calendarUrl }, urlFilter: () => true });
      return found.map((o) => ({ href: new URL(o.url).pathname, etag: o.etag ?? '', data: String(o.data) }));
    },
    stop,
  };
}

export interface LossyProxy {
  url: string;
  /** The requests forwarded, in order. */
  requests: { method: string; path: string; status: number; ifMatch?: string }[];
  /** The next request matching is forwarded and acted on, but its answer is lost: the connection just closes. */
  loseAnswerTo(method: string, path: RegExp): void;
  /** The next request matching is not forwarded but answered with this status, as a busy server would. */
  answerNext(method: string, path: RegExp, status: number, headers?: Record<string, string>): void;
  close(): Promise<void>;
}

export async function startLossyProxy(target: string): Promise<LossyProxy> {
  const requests: LossyProxy['requests'] = [];
  let lose: { method: string; path: RegExp } | undefined;
  let canned: { method: string; path: RegExp; status: number; headers: Record<string, string> } | undefined;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void (async () => {
        if (canned && canned.method === req.method && canned.path.test(req.url!)) {
          requests.push({ method: req.method!, path: req.url!, status: canned.status });
          res.writeHead(canned.status, canned.headers).end();
          canned = undefined;
          return;
        }
        const headers = Object.fromEntries(
          Object.entries(req.headers).filter(([k]) => !['host', 'connection', 'content-length'].includes(k)),
        ) as Record<string, string>;
        const body = Buffer.concat(chunks);
        const upstream = await fetch(new URL(req.url!, target), {
          method: req.method,
          headers,
          body: body.length ? body : undefined,
          redirect: 'manual',
        });
        const answer = Buffer.from(await upstream.arrayBuffer());
        const ifMatch = req.headers['if-match'];
        requests.push({
          method: req.method!,
          path: req.url!,
          status: upstream.status,
          ...(ifMatch ? { ifMatch } : {}),
        });
        if (lose && lose.method === req.method && lose.path.test(req.url!)) {
          lose = undefined;
          req.socket.destroy();
          return;
        }
        const out: Record<string, string> = {};
        upstream.headers.forEach((v, k) => {
          if (!['content-length', 'content-encoding', 'transfer-encoding', 'connection'].includes(k)) out[k] = v;
        });
        res.writeHead(upstream.status, out).end(answer);
      })().catch((err: Error) => res.writeHead(502).end(err.message));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    requests,
    loseAnswerTo(method, p) {
      lose = { method, path: p };
    },
    answerNext(method, p, status, headers = {}) {
      canned = { method, path: p, status, headers };
    },
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
