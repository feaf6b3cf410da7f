// The schedule builder's checks, in the builder's words and at its fields: the schedule is read against the API's own
// schema (model/trigger.ts scheduleConfigSchema) in the browser before anything is sent, each zod issue worded from
// its structure (plain-issue.ts) and placed by its path ("Days: choose at least one day"). What only the server knows
// (a cron Temporal cannot run, an input the agent's input node cannot read) comes back as the API's problem, whose
// `errors` name the same paths; its message is shown at that field.
import type { z } from 'zod';
import { scheduleConfigSchema, weekdays } from '../../../model/trigger';
import { jsonInputProblem } from '../../../model/json-slip';
import { plainIssue, type Issue } from './plain-issue';

/** The builder's fields, by the labels a person sees, in the order they appear. */
export const SCHEDULE_FIELDS = {
  type: 'Repeat',
  every: 'Every',
  unit: 'Unit',
  expression: 'Cron expression',
  at: 'At',
  day: 'Day of month',
  days: 'Days',
  timezone: 'Time zone',
  overlap: 'If the last run is still going',
  catchup: 'Catch up after an outage',
  input: "Each run's input",
} as const;
export type ScheduleField = keyof typeof SCHEDULE_FIELDS;
/** What is wrong, by field: the words without the label ("choose at least one day"). */
export type ScheduleProblems = Partial<Record<ScheduleField, string>>;

/** A schedule as the API takes it (the preview's body; a schedule trigger's, without `kind` and `name`). */
export type ScheduleRequest = z.input<typeof scheduleConfigSchema>;
type Repeat = ScheduleRequest['schedule'];
type InputFormat = NonNullable<ScheduleRequest['input_format']>;

const INPUT_FORMATS: readonly string[] = ['text', 'csv', 'json'] satisfies InputFormat[];

/** A form's fields: FormData in the browser (the builder's form) and on the server (its action) alike. */
interface Fields {
  get(name: string): unknown;
}
const textOf = (form: Fields, name: string) => {
  const value = form.get(name);
  return typeof value === 'string' ? value.trim() : '';
};

/**
 * The builder's fields as the API's schedule body. The input goes as typed (not trimmed: it is data; a browser's
 * CRLF line breaks back to the LF the person saw); none, or nothing typed, sends no input.
 */
export function scheduleFromFields(form: Fields): ScheduleRequest {
  const inputFormat = textOf(form, 'input_format');
  const raw = form.get('input');
  const input = typeof raw === 'string' ? raw.replace(/\r\n/g, '\n') : '';
  const withInput =
    INPUT_FORMATS.includes(inputFormat) && input.trim() !== ''
      ? { input, input_format: inputFormat as InputFormat }
      : {};
  const type = textOf(form, 'type');
  const at = textOf(form, 'at');
  // Numbers as typed: an empty or non-numeric field is NaN, which the schema names ("must be a number").
  const number = (name: string) => (textOf(form, name) === '' ? NaN : Number(textOf(form, name)));
  const schedule: Repeat =
    type === 'interval'
      ? { type, every: number('every'), unit: textOf(form, 'unit') as Extract<Repeat, { type: 'interval' }>['unit'] }
      : type === 'weekly'
        ? { type, at, days: weekdays.filter((d) => form.get(`day_${d}`) === 'on') }
        : type === 'monthly'
          ? { type, at, day: number('day') }
          : type === 'cron'
            ? { type, expression: textOf(form, 'expression') }
            : { type: 'daily', at };
  return {
    schedule,
    timezone: textOf(form, 'timezone') || 'UTC',
    overlap: (textOf(form, 'overlap') || 'skip') as ScheduleRequest['overlap'],
    catchup_window_seconds: textOf(form, 'catchup') === '' ? 300 : number('catchup'),
    ...withInput,
  };
}

/** The builder field a body path is about: `schedule.days` is Days; the schedule as a whole is its Repeat. */
function fieldOf(path: readonly PropertyKey[], request: ScheduleRequest): ScheduleField {
  const [top, inner] = path;
  if (top === 'schedule') {
    if (inner === 'every' || inner === 'unit' || inner === 'expression' || inner === 'at' || inner === 'day')
      return inner;
    if (inner === 'days') return 'days';
    return request.schedule.type === 'cron' ? 'expression' : 'type';
  }
  if (top === 'timezone') return 'timezone';
  if (top === 'overlap') return 'overlap';
  if (top === 'catchup_window_seconds') return 'catchup';
  if (top === 'input' || top === 'input_format') return 'input';
  return 'type';
}

/** An issue in the words of its field: where the generic words would not say what to do, the field's own. */
function wordsOf(field: ScheduleField, issue: Issue): string {
  if (field === 'days' && issue.code === 'too_small') return 'choose at least one day';
  if (field === 'timezone' && issue.code === 'custom')
    return 'is not a time zone this browser knows: write one such as Europe/Berlin or UTC';
  if (field === 'catchup' && issue.code === 'too_small') return `must be at least ${issue.minimum} seconds`;
  return plainIssue(issue);
}

/** What is wrong with the schedule before it is sent, by field; empty when the API's schema would take it. */
export function checkSchedule(request: ScheduleRequest): ScheduleProblems {
  const problems: ScheduleProblems = {};
  const parsed = scheduleConfigSchema.safeParse(request);
  for (const issue of parsed.success ? [] : parsed.error.issues) {
    const field = fieldOf(issue.path, request);
    problems[field] ??= wordsOf(field, issue);
  }
  if (request.input_format === 'json' && typeof request.input === 'string' && !problems.input) {
    const slip = jsonInputProblem(request.input);
    if (slip) problems.input = slip;
  }
  return problems;
}

/**
 * The API's refusal of a schedule (its problem's `errors`, each with the body path it is about) at the builder's
 * fields; a problem naming no path is the builder's as a whole (Repeat).
 */
export function problemsFromApi(
  errors: readonly { path?: string; message: string }[],
  request: ScheduleRequest,
): ScheduleProblems {
  const problems: ScheduleProblems = {};
  for (const e of errors) {
    const field = fieldOf(e.path ? e.path.split('.') : [], request);
    problems[field] ??= e.message;
  }
  return problems;
}

/** "Days: choose at least one day", one a field, in the builder's order. */
export function problemLines(problems: ScheduleProblems): string[] {
  return (Object.keys(SCHEDULE_FIELDS) as ScheduleField[]).flatMap((f) => {
    const words = problems[f];
    if (!words) return [];
    // A whole sentence of its own ("The input is not valid JSON: …") names its subject already.
    return [/^[A-Z]/.test(words) ? words : `${SCHEDULE_FIELDS[f]}: ${words}`];
  });
}
