// Payments and billing with Stripe: find and create customers, invoice them, read what was paid, and refund. Every
// write carries an idempotency key derived from the run's step, so a retried step never creates or refunds twice.
import { z } from 'zod';
import { connectionArg, defineConnector } from './definition';

const connection = connectionArg('a Stripe');
const metadata = z
  .record(z.string().max(40), z.string().max(500))
  .refine((m) => Object.keys(m).length <= 20, 'at most 20 metadata keys')
  .optional()
  .describe('your own key-value pairs, kept with the object in Stripe');
const currency = z
  .string()
  .regex(/^[a-zA-Z]{3}$/, 'a three-letter ISO currency code, e.g. "eur"')
  .transform((c) => c.toLowerCase());
const minorUnits = (what: string) =>
  z
    .number()
    .int()
    .min(1)
    .max(99_999_999)
    .describe(`${what}, in the currency's smallest unit: cents for EUR, yen for JPY`);

export const stripeConfigSchema = z.object({
  api_base: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe("leave empty for Stripe itself; a Stripe-compatible server's URL only for testing"),
  account_name: z
    .string()
    .max(200)
    .optional()
    .describe('which Stripe account this is, for people choosing a connection, e.g. "Acme EU"'),
});
export type StripeConfig = z.infer<typeof stripeConfigSchema>;

export const stripeConnector = defineConnector({
  kind: 'stripe',
  label: 'Stripe',
  category: 'payments',
  description: 'Customers, invoices, payment status and refunds in a Stripe account.',
  config: stripeConfigSchema,
  credentials: z.object({
    secret_key: z
      .string()
      .min(8)
      .max(300)
      .describe('a secret key (sk_live_… or sk_test_…) or a restricted key (rk_…) from the Stripe dashboard'),
  }),
  tools: {
    'stripe.find_customer': {
      name: 'stripe.find_customer',
      description: 'Find the customers of a Stripe connection with an email address (newest first).',
      input: z.object({ connection, email: z.string().min(3).max(320) }),
      sideEffect: 'read',
      approvalDefault: 'never',
    },
    'stripe.create_customer': {
      name: 'stripe.create_customer',
      description: 'Create a customer in Stripe; answers its id (cus_…), which invoices name.',
      input: z.object({
        connection,
        email: z.email().max(320),
        name: z.string().max(256).optional(),
        description: z.string().max(1000).optional(),
        metadata,
      }),
      sideEffect: 'external',
      approvalDefault: 'always',
    },
    'stripe.create_invoice': {
      name: 'stripe.create_invoice',
      description:
        'Create an invoice for a Stripe customer with its line items (a draft, unless finalize is set); invoice items ' +
        'the customer already has pending are included too, as Stripe does. With days_until_due Stripe sends it to ' +
        'the customer to pay; without, it charges their default payment method.',
      input: z.object({
        connection,
        customer: z.string().regex(/^cus_\w+$/, 'a customer id (cus_…)'),
        currency: currency.describe('the currency of every line, e.g. "eur"'),
        items: z
          .array(
            z.object({
              description: z.string().min(1).max(500),
              amount: minorUnits('the amount'),
            }),
          )
          .min(1)
          .max(50),
        description: z.string().max(1500).optional().describe('a memo shown on the invoice'),
        days_until_due: z.number().int().min(0).max(365).optional(),
        finalize: z
          .boolean()
          .default(false)
          .describe('finalize it now (it can no longer be edited) rather than leave a draft'),
        metadata,
      }),
      sideEffect: 'external',
      approvalDefault: 'always',
    },
    'stripe.get_invoice': {
      name: 'stripe.get_invoice',
      description:
        'Read an invoice of a Stripe connection: its status (draft, open, paid, void, uncollectible), amounts and lines.',
      input: z.object({ connection, invoice: z.string().regex(/^in_\w+$/, 'an invoice id (in_…)') }),
      sideEffect: 'read',
      approvalDefault: 'never',
    },
    'stripe.payment_status': {
      name: 'stripe.payment_status',
      description:
        'Whether a payment went through: the status of an invoice (in_…), payment intent (pi_…) or charge (ch_…), ' +
        'with what was paid and refunded.',
      input: z.object({
        connection,
        id: z.string().regex(/^(in|pi|ch)_\w+$/, 'an invoice (in_…), payment intent (pi_…) or charge (ch_…) id'),
      }),
      sideEffect: 'read',
      approvalDefault: 'never',
    },
    'stripe.refund': {
      name: 'stripe.refund',
      description: 'Refund a payment (a payment intent pi_… or a charge ch_…), all of it or an amount.',
      input: z.object({
        connection,
        payment: z.string().regex(/^(pi|ch)_\w+$/, 'a payment intent (pi_…) or charge (ch_…) id'),
        amount: minorUnits('how much to refund (all of it if not given)').optional(),
        reason: z.enum(['duplicate', 'fraudulent', 'requested_by_customer']).optional(),
        metadata,
      }),
      sideEffect: 'external',
      approvalDefault: 'always',
    },
  },
  events: {
    'invoice.paid': { description: 'An invoice was paid (once per invoice).' },
    'payment.failed': {
      description: 'A payment attempt failed (a declined card, an invoice that could not be charged).',
    },
  },
  where: (config) => {
    const host = config.api_base ? new URL(config.api_base).host : 'api.stripe.com';
    return config.account_name ? `${host} (${config.account_name})` : host;
  },
});
