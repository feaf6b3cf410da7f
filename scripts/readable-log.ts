// The app's JSON log lines (pino), as `npm start` prints them in a terminal: one short line a person reads
// ("GET /v1/runs → 200 in 12 ms", "warn: schedules reconciled …") rather than a JSON object with every request
// header. Production runs the processes on their own (docker/), where the JSON goes to a log collector unchanged;
// CADRE_LOG_FORMAT=json keeps it unchanged here too.

const levels: Record<number, string> = { 10: 'trace', 20: 'debug', 40: 'warn', 50: 'error', 60: 'fatal' };

/** Fields every line has, or that the short form already says. */
const said = new Set(['level', 'time', 'pid', 'hostname', 'name', 'msg', 'req', 'res', 'responseTime', 'reqId', 'err']);

interface PinoLine {
  level?: number;
  msg?: string;
  req?: { method?: string; url?: string };
  res?: { statusCode?: number };
  responseTime?: number;
  err?: { message?: string; stack?: string };
  [key: string]: unknown;
}

function parse(line: string): PinoLine | null {
  if (!line.startsWith('{"level":')) return null;
  try {
    const value: unknown = JSON.parse(line);
    return value !== null && typeof value === 'object' ? (value as PinoLine) : null;
  } catch {
    return null;
  }
}

/** The line as a person reads it; a line that is not the app's JSON is kept as it is. */
export function readableLogLine(line: string): string {
  const entry = parse(line);
  if (!entry) return line;
  const level = levels[entry.level ?? 30];
  const parts: string[] = [];
  if (level) parts.push(`${level}:`);
  if (entry.req?.method && entry.res?.statusCode) {
    const took = typeof entry.responseTime === 'number' ? ` in ${Math.round(entry.responseTime)} ms` : '';
    parts.push(`${entry.req.method} ${entry.req.url} → ${entry.res.statusCode}${took}`);
  } else if (entry.msg) parts.push(entry.msg);
  const extra = Object.entries(entry)
    .filter(([k, v]) => !said.has(k) && v !== null && ['string', 'number', 'boolean'].includes(typeof v))
    .map(([k, v]) => `${k}=${typeof v === 'string' && /\s/.test(v) ? JSON.stringify(v) : String(v)}`);
  parts.push(...extra);
  if (entry.err?.message && !entry.msg?.includes(entry.err.message)) parts.push(`(${entry.err.message})`);
  // An error's stack is what a person reporting it needs; lower levels keep to one line.
  const stack = (entry.level ?? 30) >= 50 && entry.err?.stack ? `\n${entry.err.stack}` : '';
  return parts.join(' ') + stack;
}
