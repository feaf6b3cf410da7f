// The schedule builder's checks (ui/src/lib/schedule-check.ts, model/json-slip.ts, plain-issue.ts): a schedule is read
// against the API's own schema before it is sent and each problem is said in the builder's words at its field, from
// the issue's structure rather than zod's English; typed JSON that is not JSON says what is wrong and where as a
// person counts lines and columns; the API's refusals land at the field their path names.
import assert from 'node:assert/strict';
import { scheduleConfigSchema } from '../../model/trigger';
import { jsonInputProblem, jsonSlip } from '../../model/json-slip';
import { plainIssue, type Issue } from '../../ui/src/lib/plain-issue';
import {
  checkSchedule,
  problemLines,
  problemsFromApi,
  scheduleFromFields,
  type ScheduleRequest,
} from '../../ui/src/lib/schedule-check';

/** The builder's form as the browser sends it. */
function builder(fields: Record<string, string>): FormData {
  const form = new FormData();
  const all: Record<string, string> = {
    type: 'weekly',
    at: '09:00',
    day_mon: 'on',
    timezone: 'Europe/Berlin',
    overlap: 'skip',
    catchup: '300',
    input_format: 'none',
    ...fields,
  };
  for (const [name, value] of Object.entries(all)) if (value !== '') form.set(name, value);
  return form;
}

/** Words zod or the API use for their own purposes, never a person's. */
const machineWords = /Too (small|big)|expected|received|IANA|schedule\.|catchup_window|position \d|Unexpected token/;

describe('schedule builder checks', () => {
  it('takes a schedule the API takes, built from the builder’s fields as typed', () => {
    const request = scheduleFromFields(
      builder({ day_mon: '', day_tue: 'on', day_sat: 'on', at: '07:45', input_format: 'csv', input: 'a,b\r\n1,2' }),
    );
    assert.deepEqual(request, {
      schedule: { type: 'weekly', at: '07:45', days: ['tue', 'sat'] },
      timezone: 'Europe/Berlin',
      overlap: 'skip',
      catchup_window_seconds: 300,
      input: 'a,b\n1,2',
      input_format: 'csv',
    });
    assert.deepEqual(checkSchedule(request), {});
    assert.ok(scheduleConfigSchema.safeParse(request).success, 'the API’s schema agrees');
  });

  it('names no day chosen and a time zone that is none at their fields, in the builder’s words', () => {
    const problems = checkSchedule(scheduleFromFields(builder({ day_mon: '', timezone: 'Mars/Olympus' })));
    assert.deepEqual(Object.keys(problems).sort(), ['days', 'timezone']);
    const lines = problemLines(problems);
    assert.equal(lines[0], 'Days: choose at least one day');
    assert.match(lines[1], /^Time zone: is not a time zone .* such as Europe\/Berlin or UTC$/);
    for (const line of lines) assert.doesNotMatch(line, machineWords);
  });

  it('says what each kind of repeat needs', () => {
    const said = (fields: Record<string, string>) => checkSchedule(scheduleFromFields(builder(fields)));
    assert.deepEqual(said({ type: 'interval', every: '', unit: 'minutes' }), { every: 'must be a number' });
    assert.deepEqual(said({ type: 'interval', every: '0', unit: 'minutes' }), { every: 'must be at least 1' });
    assert.deepEqual(said({ type: 'daily', at: '' }), { at: 'must be a time of day as HH:MM, 24-hour (e.g. 09:00)' });
    assert.deepEqual(said({ type: 'monthly', day: '32' }), { day: 'must be at most 31' });
    assert.deepEqual(said({ type: 'cron', expression: '61 * * *' }), {
      expression: 'a cron expression has five fields: minute hour day month weekday',
    });
    assert.deepEqual(said({ catchup: '5' }), { catchup: 'must be at least 10 seconds' });
    // A cron the schema reads as five fields is the server's to judge (Temporal's own parser).
    assert.deepEqual(said({ type: 'cron', expression: '61 * * * *' }), {});
  });

  it('says where typed JSON goes wrong, as a person counts, and keeps the text as typed', () => {
    const typed = '[\n  {"id": 1}\n  {"id": 2}\n]';
    const request = scheduleFromFields(builder({ input_format: 'json', input: typed }));
    assert.equal(request.input, typed, 'the input goes as typed');
    assert.deepEqual(checkSchedule(request), {
      input:
        'The input is not valid JSON: something is missing near line 3, column 3 — check for a missing comma, quote or bracket.',
    });
    assert.deepEqual(problemLines(checkSchedule(request)), [checkSchedule(request).input]);
    // Text and CSV are the server's to read (the agent's input node): nothing is said here.
    assert.deepEqual(checkSchedule(scheduleFromFields(builder({ input_format: 'csv', input: '{' }))), {});
  });

  it('finds the usual slips in JSON and names each', () => {
    const at = (text: string) => {
      const slip = jsonSlip(text);
      return slip && `${slip.line}:${slip.column} ${slip.what}`;
    };
    assert.equal(at('{"a": 1, "b": [1, 2.5e3, true, null, "x\\"y\\u00e9"]}'), null);
    assert.equal(at('  "just text"  '), null);
    assert.equal(at('{"a": 1,}'), '1:9 there is a comma with nothing after it');
    assert.equal(at('[1, 2,\n]'), '2:1 there is a comma with nothing after it');
    assert.equal(at("{'a': 1}"), '1:2 a text is in single quotes');
    assert.equal(at('{"a": hello}'), '1:7 the word hello is not in quotes');
    assert.equal(at('{a: 1}'), '1:2 the word a is not in quotes');
    assert.equal(at('{"a": "open\n}'), '1:7 a text in quotes is not closed');
    assert.equal(at('[{"a": 1}'), '1:10 it ends too soon');
    assert.equal(at('{"a" 1}'), '1:6 something is missing');
    assert.equal(at('{"a": 1}\n{"a": 2}'), '2:1 there is more after the end');
    assert.equal(at('{"a": 01}'), '1:8 something is missing');
    assert.equal(at('{"a": "\\x"}'), '1:8 a backslash starts an unknown escape');
    assert.equal(at('{"é": ü}'), '1:7 “ü” is not expected there');
    assert.match(
      jsonInputProblem('[1 2]') ?? '',
      /^The input is not valid JSON: something is missing near line 1, column 4 — /,
    );
    assert.equal(jsonInputProblem('[1, 2]'), null);
  });

  it('words an issue from its structure, whatever zod’s English says', () => {
    const issue = (fields: Record<string, unknown>) =>
      ({ path: [], message: 'Zu klein!', ...fields }) as unknown as Issue;
    assert.equal(plainIssue(issue({ code: 'too_small', origin: 'array', minimum: 1 })), 'needs at least one entry');
    assert.equal(plainIssue(issue({ code: 'too_small', origin: 'string', minimum: 1 })), 'is required');
    assert.equal(plainIssue(issue({ code: 'too_big', origin: 'number', maximum: 31 })), 'must be at most 31');
    assert.equal(plainIssue(issue({ code: 'invalid_value', values: ['a', 'b'] })), 'must be one of: a, b');
  });

  it('places the API’s refusals at the field their path names', () => {
    const weekly = scheduleFromFields(builder({}));
    const cron: ScheduleRequest = { ...weekly, schedule: { type: 'cron', expression: '61 * * * *' } };
    const csvRefused = 'the agent’s input node (csv) cannot read the schedule’s input: input holds no items';
    assert.deepEqual(problemsFromApi([{ path: 'input', message: csvRefused }], weekly), { input: csvRefused });
    assert.deepEqual(problemLines({ input: csvRefused }), [`Each run's input: ${csvRefused}`]);
    assert.deepEqual(problemsFromApi([{ path: 'schedule.expression', message: '"61" is out of range' }], cron), {
      expression: '"61" is out of range',
    });
    assert.deepEqual(problemsFromApi([{ path: 'schedule', message: 'never fires' }], weekly), { type: 'never fires' });
    assert.deepEqual(problemsFromApi([{ path: 'timezone', message: 'x' }, { message: 'y' }], weekly), {
      timezone: 'x',
      type: 'y',
    });
  });
});
