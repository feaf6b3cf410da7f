// What the browser suites share: Chromium driven by playwright-core (skipped, saying what it needs, where either is
// missing), and one web server for the API and the console, as scripts/web.ts runs them.
import fs from 'node:fs';
import http, { type Server } from 'node:http';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { createApp } from '../../api/app';
import { apiAdapters } from '../../scripts/api-adapters';
import { createLogger } from '../../api/logger';
import type { ConnectorLimits } from '../../model/connection';
import type { SecretBox } from '../../db/secret-box';
import { consoleHandler } from './console-build';
import type { Harness } from './harness';

const chromiumPath = '/usr/bin/chromium';
/** Where suites put their screenshots (ignored by git). */
export const screenshots = path.join(__dirname, '..', '..', 'test-output', 'screenshots');

/** The little of playwright-core the suites use, so they type-check whether or not the package is installed. */
export interface Page {
  $(selector: string): Promise<unknown>;
  $$(selector: string): Promise<unknown[]>;
  evaluate(script: string): Promise<unknown>;
  goto(url: string): Promise<unknown>;
  click(selector: string): Promise<void>;
  fill(selector: string, value: string): Promise<void>;
  check(selector: string): Promise<void>;
  uncheck(selector: string): Promise<void>;
  selectOption(selector: string, value: string): Promise<unknown>;
  setInputFiles(selector: string, files: { name: string; mimeType: string; buffer: Buffer }[]): Promise<void>;
  inputValue(selector: string): Promise<string>;
  isChecked(selector: string): Promise<boolean>;
  waitForURL(url: string | RegExp): Promise<void>;
  waitForSelector(selector: string, options?: { timeout?: number; state?: 'detached' }): Promise<unknown>;
  waitForFunction(script: string): Promise<unknown>;
  innerText(selector: string): Promise<string>;
  content(): Promise<string>;
  screenshot(options: { path: string; fullPage?: boolean }): Promise<unknown>;
  url(): string;
  on(event: 'dialog', listener: (dialog: { message(): string; accept(): Promise<void> }) => void): void;
  on(event: 'pageerror', listener: (error: Error) => void): void;
}
export interface Browser {
  newPage(options?: object): Promise<Page>;
  close(): Promise<void>;
}

/** Headless Chromium, or the suite is skipped when playwright-core or Debian's chromium is missing. */
export async function launchBrowser(suite: Mocha.Context): Promise<Browser> {
  let playwright: { chromium: { launch(o: object): Promise<Browser> } } | undefined;
  try {
    playwright = await import('playwright-core' as string);
  } catch {
    playwright = undefined;
  }
  if (!playwright || !fs.existsSync(chromiumPath)) {
    console.log(`    (skipped: needs playwright-core and ${chromiumPath})`);
    suite.skip();
  }
  fs.mkdirSync(screenshots, { recursive: true });
  return playwright!.chromium.launch({
    executablePath: chromiumPath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
}

/** A server on a free port of 127.0.0.1, to mount the web process on once its address is known. */
export async function listen(): Promise<{ server: Server; base: string }> {
  const server = await new Promise<Server>((resolve) => {
    const s = http.createServer();
    s.listen(0, '127.0.0.1', () => resolve(s));
  });
  return { server, base: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

/** The API and the console on `web`, as scripts/web.ts serves them; people sign in (no console key). */
export async function mountWeb(
  web: { server: Server; base: string },
  h: Harness,
  opts: { secrets: SecretBox; connectors?: ConnectorLimits },
): Promise<void> {
  delete process.env.CADRE_CONSOLE_API_KEY;
  web.server.on(
    'request',
    createApp({
      adapters: apiAdapters(),
      knex: h.stack.knex,
      temporal: h.client,
      temporalConfig: h.temporalConfig,
      links: { publicUrl: web.base, temporal: h.temporalConfig },
      bodyLimit: '1mb',
      budgetScope: `${randomUUID()}:`,
      secrets: opts.secrets,
      logger: createLogger('silent', 'web'),
      versions: { temporal: 'test', postgres: 'test' },
      ready: async () => ({ temporal: true, postgres: true }),
      console: await consoleHandler(web.base),
      connectors: opts.connectors,
      inboxDomain: h.config.inbox.domain,
      model: h.config.model,
    }),
  );
}

/** One server for the API and the console, which reads through the API. */
export async function startWebWithConsole(
  h: Harness,
  opts: { secrets: SecretBox; connectors?: ConnectorLimits },
): Promise<{ server: Server; base: string }> {
  // The console needs the server's address before it loads, so the handler is attached after listen.
  const web = await listen();
  await mountWeb(web, h, opts);
  return web;
}

/**
 * Waits until the page has hydrated (the root layout marks it): a page loaded in full (a form sent before the
 * console's script had started, then a redirect) has its fields set again by hydration, wiping what was typed.
 */
export const hydrated = (page: Page) => page.waitForSelector('html[data-hydrated]');
