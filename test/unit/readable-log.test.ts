import assert from 'node:assert/strict';
import { createLogger } from '../../api/logger';
import { readableLogLine } from '../../scripts/readable-log';

/** What the app's own logger writes for a call, as `npm start` shows it. */
function shown(write: (logger: ReturnType<typeof createLogger>) => void): string {
  const lines: string[] = [];
  const logger = createLogger('info', 'web', { write: (line: string) => void lines.push(line.trimEnd()) });
  write(logger);
  assert.equal(lines.length, 1);
  return readableLogLine(lines[0]);
}

describe('npm start shows the JSON log lines as lines a person reads', () => {
  it('a request: method, path, status and time, without its headers', () => {
    const line = shown((log) =>
      log.info(
        {
          req: {
            method: 'GET',
            url: '/v1/runs?limit=5',
            headers: { 'user-agent': 'curl/8', authorization: 'Bearer k' },
          },
          res: { statusCode: 200, headers: {} },
          responseTime: 12.4,
        },
        'request completed',
      ),
    );
    assert.equal(line, 'GET /v1/runs?limit=5 → 200 in 12 ms');
  });

  it('an info line is its message and its small fields; a warning says so', () => {
    assert.equal(
      shown((log) => log.info({ schedules: 3, agent: 'Route invoices' }, 'schedules reconciled with the database')),
      'schedules reconciled with the database schedules=3 agent="Route invoices"',
    );
    assert.equal(
      shown((log) => log.warn('the model is not configured')),
      'warn: the model is not configured',
    );
  });

  it('an error keeps its message and its stack', () => {
    const err = new Error('connection refused');
    const line = shown((log) => log.error({ err }, 'the mailbox watch failed'));
    const [first, ...stack] = line.split('\n');
    assert.equal(first, 'error: the mailbox watch failed (connection refused)');
    assert.match(stack[0], /^Error: connection refused$/);
    assert.ok(stack.some((l) => l.includes('readable-log.test')));
  });

  it('leaves any other line as it is', () => {
    for (const line of ['time=2026-11-27 level=WARN msg="Failed to poll"', '{"not":"pino"}', '{"level":30, broken'])
      assert.equal(readableLogLine(line), line);
  });
});
