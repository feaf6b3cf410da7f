// Formatting shared by every page. Times are relative to a `now` that the server load provides, so the server
// render and the hydrated page agree; absolute times are shown in UTC for the same reason.

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

export function humanize(value: string): string {
  const words = value.replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** A run's trigger as people name it: "api" is the API, the rest read as words. */
export function triggerLabel(trigger: string): string {
  return trigger === 'api' ? 'API' : humanize(trigger);
}

/**
 * A message shown to a person as a sentence: the API words its refusals for any caller, starting lowercase ("that code
 * is not right"), and the console starts them with a capital.
 */
export const sentence = (text: string): string => text.charAt(0).toUpperCase() + text.slice(1);

export function formatTimestamp(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return `${date.toISOString().slice(0, 19).replace('T', ' ')} UTC`;
}

export function timeAgo(iso: string | null | undefined, now: number): string {
  if (!iso) return '—';
  const at = new Date(iso).getTime();
  if (Number.isNaN(at)) return iso;
  const elapsed = now - at;
  if (elapsed < -10 * SECOND) {
    const ahead = -elapsed;
    if (ahead < MINUTE) return `in ${Math.floor(ahead / SECOND)} s`;
    if (ahead < HOUR) return `in ${Math.floor(ahead / MINUTE)} min`;
    if (ahead < DAY) return `in ${Math.floor(ahead / HOUR)} h`;
    if (ahead < 30 * DAY) return `in ${Math.floor(ahead / DAY)} d`;
    return formatTimestamp(iso).slice(0, 10);
  }
  if (elapsed < 10 * SECOND) return 'just now';
  if (elapsed < MINUTE) return `${Math.floor(elapsed / SECOND)} s ago`;
  if (elapsed < HOUR) return `${Math.floor(elapsed / MINUTE)} min ago`;
  if (elapsed < DAY) return `${Math.floor(elapsed / HOUR)} h ago`;
  if (elapsed < 30 * DAY) return `${Math.floor(elapsed / DAY)} d ago`;
  return formatTimestamp(iso).slice(0, 10);
}

export function formatDuration(ms: number | null | undefined): string {
  if (ms == null || !Number.isFinite(ms) || ms < 0) return '—';
  if (ms < SECOND) return `${Math.round(ms)} ms`;
  if (ms < MINUTE) return `${(ms / SECOND).toFixed(ms < 10 * SECOND ? 1 : 0)} s`;
  if (ms < HOUR) return `${Math.floor(ms / MINUTE)} min ${Math.floor((ms % MINUTE) / SECOND)} s`;
  if (ms < DAY) return `${Math.floor(ms / HOUR)} h ${Math.floor((ms % HOUR) / MINUTE)} min`;
  return `${Math.floor(ms / DAY)} d ${Math.floor((ms % DAY) / HOUR)} h`;
}

/** A finished run has its duration; a running one has been going since it started. */
export function runDuration(
  run: { duration_ms: number | null; started_at: string | null; ended_at: string | null },
  now: number,
): number | null {
  if (run.duration_ms != null) return run.duration_ms;
  if (!run.started_at) return null;
  const end = run.ended_at ? new Date(run.ended_at).getTime() : now;
  return end - new Date(run.started_at).getTime();
}

export function formatBytes(bytes: number | null | undefined): string {
  if (bytes == null || !Number.isFinite(bytes)) return '—';
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

export function formatNumber(value: number | null | undefined): string {
  return value == null ? '—' : value.toLocaleString('en-US');
}

export function formatCost(usd: number | null | undefined): string {
  if (usd == null) return '—';
  return usd > 0 && usd < 0.01 ? '< $0.01' : `$${usd.toFixed(2)}`;
}

export function prettyJson(value: unknown): string {
  if (value === undefined || value === null) return '';
  if (typeof value === 'string') return value;
  return JSON.stringify(value, null, 2) ?? String(value);
}

/** One line, cut to fit a table cell; the full value is shown elsewhere on the page. */
export function compactJson(value: unknown, max = 120): string {
  if (value === null || value === undefined) return '—';
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? String(value));
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

/** A plain object (an item's data, a tool call's arguments): shown and edited field by field. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/**
 * One field's value as a person reads it: text as it is, numbers and yes/no as words, a list as its entries
 * ("a, b"), a group of values as "name: value" pairs, in brackets when inside another (never JSON).
 */
export function fieldText(value: unknown, inside = false): string {
  if (value === null || value === undefined || value === '') return '—';
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return String(value);
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (Array.isArray(value)) return value.length ? value.map((v) => fieldText(v, true)).join(', ') : '—';
  if (isRecord(value)) {
    const pairs = Object.entries(value).map(([k, v]) => `${k}: ${fieldText(v, true)}`);
    if (pairs.length === 0) return '—';
    return inside ? `(${pairs.join(', ')})` : pairs.join(', ');
  }
  return String(value);
}

/** An object on one line as "name: value · name: value" (not JSON), cut to fit a table cell; any other value too. */
export function fieldsLine(value: unknown, max = 120): string {
  if (!isRecord(value)) {
    const text = value === null || value === undefined ? '—' : fieldText(value);
    return text.length > max ? `${text.slice(0, max - 1)}…` : text;
  }
  const text = Object.entries(value)
    .map(([k, v]) => `${k}: ${fieldText(v, true)}`)
    .join(' · ');
  return text.length > max ? `${text.slice(0, max - 1)}…` : text || '—';
}

export function shortId(id: string): string {
  return id.length > 8 ? id.slice(0, 8) : id;
}

/** A moment as the clock on the wall of `timeZone` shows it: "Mon 29 Mar, 09:00". */
export function formatInZone(iso: string, timeZone: string): string {
  return new Intl.DateTimeFormat('en-GB', {
    timeZone,
    weekday: 'short',
    day: 'numeric',
    month: 'short',
    hour: '2-digit',
    minute: '2-digit',
    hour12: false,
  }).format(new Date(iso));
}

/**
 * An item's number as people count it: the API's `seq`/`item_seq` starts at 0 (documented so), people start at 1,
 * so CSV row 1 is item 1.
 */
export function itemNumber(seq: number): number {
  return seq + 1;
}
