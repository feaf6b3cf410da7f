// The API's refusal of a schedule, in the schedule builder's words: "schedule.days: Too small: expected array to
// have >=1 items" is "Days: choose at least one", each field named by its label in the builder.
const LABELS: Record<string, string> = {
  'schedule.expression': 'Cron expression',
  'schedule.at': 'At',
  'schedule.days': 'Days',
  'schedule.every': 'Every',
  'schedule.unit': 'Unit',
  'schedule.day': 'Day of month',
  timezone: 'Time zone',
  overlap: 'If the last run is still going',
  catchup_window_seconds: 'Catch up after an outage',
  input: "Each run's input",
  input_format: "Each run's input",
};

/** zod's default words for a bound, as a person says it; any other text is kept. */
function plain(text: string): string {
  let m = /^Too small: expected array to have >=(\d+) items?$/.exec(text);
  if (m) return m[1] === '1' ? 'choose at least one' : `choose at least ${m[1]}`;
  m = /^Too small: expected number to be >=(\S+)$/.exec(text);
  if (m) return `must be at least ${m[1]}`;
  m = /^Too big: expected number to be <=(\S+)$/.exec(text);
  if (m) return `must be at most ${m[1]}`;
  m = /^Too big: expected string to have <=(\d+) characters$/.exec(text);
  if (m) return `is too long (at most ${m[1]} characters)`;
  return text.replace(/^an IANA time zone/, 'a time zone name');
}

export function scheduleProblem(message: string): string {
  return message
    .split('; ')
    .map((part) => {
      const m = /^([\w.]+): (.*)$/s.exec(part);
      return m && m[1] in LABELS ? `${LABELS[m[1]]}: ${plain(m[2])}` : part;
    })
    .join('; ');
}
