// The trigger model: what starts an agent's runs besides a person or the API. Pure zod schemas, shared by the
// API (which validates and saves triggers) and the activities (which fire them).
import { z } from 'zod';
import { conditionsSchema } from './agent';

export const triggerKinds = ['schedule', 'webhook', 'form', 'chain', 'event'] as const;
export type TriggerKind = (typeof triggerKinds)[number];

export const weekdays = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof weekdays)[number];

const timeOfDay = z.string().regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'a time of day as HH:MM, 24-hour (e.g. 09:00)');

export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

/** When a schedule fires. Every kind but `interval` is read in the trigger's time zone. */
export const scheduleSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('interval'),
    every: z.number().int().min(1).max(10_000),
    unit: z.enum(['seconds', 'minutes', 'hours']),
  }),
  z.object({ type: z.literal('daily'), at: timeOfDay }),
  z.object({ type: z.literal('weekly'), days: z.array(z.enum(weekdays)).min(1), at: timeOfDay }),
  z.object({
    type: z.literal('monthly'),
    day: z.number().int().min(1).max(31),
    at: timeOfDay,
  }),
  z.object({
    type: z.literal('cron'),
    expression: z
      .string()
      .trim()
      .refine((e) => e.split(/\s+/).length === 5, 'a cron expression has five fields: minute hour day month weekday'),
  }),
]);
export type Schedule = z.infer<typeof scheduleSchema>;

/** Temporal's overlap policies, in the words the console shows. */
export const overlapPolicies = ['skip', 'buffer_one', 'buffer_all', 'cancel_other', 'allow_all'] as const;

/** How a schedule's input is written; `text` is handed to the agent's input node as typed. */
export const scheduleInputFormats = ['text', 'csv', 'json'] as const;

export const scheduleConfigSchema = z.object({
  schedule: scheduleSchema,
  timezone: z.string().default('UTC').refine(isTimeZone, 'an IANA time zone such as Europe/Berlin or UTC'),
  /** What happens when a fire comes while the previous scheduled run is still going. */
  overlap: z.enum(overlapPolicies).default('skip'),
  /** After an outage, fires missed within this window still run; older ones are dropped. */
  catchup_window_seconds: z
    .number()
    .int()
    .min(10)
    .max(30 * 86_400)
    .default(300),
  /**
   * The input each scheduled run receives, read by the agent's input node as any run's input is (checked against it
   * when the schedule is saved). None (null or empty, the default): each run is one empty item, so the agent runs at
   * every fire even with no data to give it (a scheduled run counts as a run even when there is no new data). When
   * it fired and which trigger fired it are the run's `fired_at` and `trigger_id`, never part of its input.
   */
  input: z.string().max(1_000_000).nullable().default(null),
  /** What `input` is: `text` (handed to the input node as typed), `csv` or `json` (also checked to be that). */
  input_format: z.enum(scheduleInputFormats).default('text'),
});

/** A schedule's input, or null when its runs take none (one empty item each). */
export const scheduleInputOf = (config: Pick<ScheduleConfig, 'input'>): string | null =>
  config.input && config.input.trim() !== '' ? config.input : null;

/**
 * Micro-batching: deliveries collected for a window into one run of many items (one item per delivery), for event
 * rates that one run per delivery cannot keep up with. Unset: each delivery starts its own run.
 */
export const deliveryBatchSchema = z.object({
  /** The window opens with its first delivery and closes this long after it. */
  max_wait_ms: z.number().int().min(10).max(3_600_000),
  /** A batch this full closes at once. */
  max_items: z.number().int().min(1).max(1_000),
});
export type DeliveryBatchConfig = z.infer<typeof deliveryBatchSchema>;

export const webhookConfigSchema = z.object({
  /** Only deliveries whose JSON body matches start a run. */
  filter: conditionsSchema.optional(),
  batch: deliveryBatchSchema.optional(),
});

const fieldName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,62}$/, 'field names are letters, digits or "_", starting with a letter');

export const formFieldSchema = z
  .object({
    name: fieldName,
    label: z.string().min(1).max(200),
    type: z.enum(['text', 'textarea', 'number', 'email', 'date', 'select', 'checkbox']).default('text'),
    required: z.boolean().default(false),
    options: z.array(z.string().min(1)).optional(),
    help: z.string().max(500).optional(),
  })
  .refine((f) => f.type !== 'select' || (f.options?.length ?? 0) > 0, {
    message: 'a select field needs options',
    path: ['options'],
  });
export type FormField = z.infer<typeof formFieldSchema>;

export const formConfigSchema = z.object({
  title: z.string().min(1).max(200),
  description: z.string().max(2_000).default(''),
  fields: z
    .array(formFieldSchema)
    .min(1)
    .refine((fs) => new Set(fs.map((f) => f.name)).size === fs.length, 'field names must be unique'),
  submit_label: z.string().max(60).default('Submit'),
  filter: conditionsSchema.optional(),
  batch: deliveryBatchSchema.optional(),
});

export const chainEndStatuses = ['completed', 'failed', 'needs_review', 'cancelled'] as const;

export const chainConfigSchema = z.object({
  /** The agent whose finished runs fire this trigger. */
  source_agent_id: z.uuid('source_agent_id must be an agent id'),
  /** Which end states of the source run count; by default only a completed run. */
  on_statuses: z.array(z.enum(chainEndStatuses)).min(1).default(['completed']),
  filter: conditionsSchema.optional(),
});

/**
 * Something happening in a connected system (model/connectors/events.ts): a message received, a file uploaded, a row
 * or record created. The trigger polls the connection every `poll_interval_seconds`; each new event starts a run with
 * the event as its item, or joins a batch.
 */
export const eventConfigSchema = z.object({
  connection: z.string().min(1).max(60).describe('the connection of the workspace to watch'),
  event: z.string().min(1).max(100).describe("one of the connection's events (GET /v1/connectors)"),
  /** The event's own choices (a folder, a prefix, a table), checked against the event's options when saved. */
  options: z.record(z.string(), z.unknown()).default({}),
  poll_interval_seconds: z.number().int().min(5).max(86_400).default(60),
  /** Only events whose data matches start a run. */
  filter: conditionsSchema.optional(),
  batch: deliveryBatchSchema.optional(),
  /**
   * After the agent was paused: `skip_missed` (the default) starts from what happens after it is live again, so a
   * pause really stops it acting on what arrived meanwhile; `deliver_missed` catches up on all of it.
   */
  on_resume: z.enum(['skip_missed', 'deliver_missed']).default('skip_missed'),
});

const name = z.string().trim().min(1).max(200).optional();

/** A trigger as the API receives it: `kind` plus that kind's settings. */
export const triggerInputSchema = z.discriminatedUnion('kind', [
  scheduleConfigSchema.extend({ kind: z.literal('schedule'), name }),
  webhookConfigSchema.extend({ kind: z.literal('webhook'), name }),
  formConfigSchema.extend({ kind: z.literal('form'), name }),
  chainConfigSchema.extend({ kind: z.literal('chain'), name }),
  eventConfigSchema.extend({ kind: z.literal('event'), name }),
]);
export type TriggerInput = z.infer<typeof triggerInputSchema>;

export type ScheduleConfig = z.infer<typeof scheduleConfigSchema>;
export type WebhookConfig = z.infer<typeof webhookConfigSchema>;
export type FormConfig = z.infer<typeof formConfigSchema>;
export type ChainConfig = z.infer<typeof chainConfigSchema>;
export type EventConfig = z.infer<typeof eventConfigSchema>;

export interface FieldError {
  field: string;
  message: string;
}

/**
 * Checks a form submission against the form's fields: each problem is named by its field, so the form can
 * show it next to that field. Values come back typed (numbers as numbers, checkboxes as booleans).
 */
export function validateSubmission(
  fields: FormField[],
  values: Record<string, unknown>,
): { data: Record<string, unknown>; errors: FieldError[] } {
  const data: Record<string, unknown> = {};
  const errors: FieldError[] = [];
  for (const f of fields) {
    const raw = values[f.name];
    const empty = raw === undefined || raw === null || (typeof raw === 'string' && raw.trim() === '');
    if (f.type === 'checkbox') {
      const on = raw === true || raw === 'true' || raw === 'on' || raw === '1';
      if (f.required && !on) errors.push({ field: f.name, message: `${f.label} must be ticked` });
      data[f.name] = on;
      continue;
    }
    if (empty) {
      if (f.required) errors.push({ field: f.name, message: `${f.label} is required` });
      continue;
    }
    const text = String(raw).trim();
    switch (f.type) {
      case 'number': {
        const n = Number(text);
        if (!Number.isFinite(n)) errors.push({ field: f.name, message: `${f.label} must be a number` });
        else data[f.name] = n;
        break;
      }
      case 'email':
        if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text))
          errors.push({ field: f.name, message: `${f.label} must be an email address` });
        else data[f.name] = text;
        break;
      case 'date':
        if (!/^\d{4}-\d{2}-\d{2}$/.test(text) || Number.isNaN(Date.parse(text)))
          errors.push({ field: f.name, message: `${f.label} must be a date (YYYY-MM-DD)` });
        else data[f.name] = text;
        break;
      case 'select':
        if (!f.options!.includes(text))
          errors.push({ field: f.name, message: `${f.label} must be one of: ${f.options!.join(', ')}` });
        else data[f.name] = text;
        break;
      default:
        if (text.length > 10_000) errors.push({ field: f.name, message: `${f.label} is too long` });
        else data[f.name] = text;
    }
  }
  const known = new Set(fields.map((f) => f.name));
  for (const key of Object.keys(values)) {
    if (!known.has(key)) errors.push({ field: key, message: `the form has no field "${key}"` });
  }
  return { data, errors };
}
