// The Stripe tools. Answers are the fields a person or a next step needs, not Stripe's whole objects; every write
// passes an idempotency key per write of the step (client.ts), so retrying the step repeats nothing.
import type Stripe from 'stripe';
import type { ToolContext } from '../../tools/tool-context';
import { idempotencyKey, stripeCall, type StripeConnection } from './client';

const customerOf = (c: Stripe.Customer) => ({
  id: c.id,
  email: c.email ?? null,
  name: c.name ?? null,
  description: c.description ?? null,
  created: new Date(c.created * 1000).toISOString(),
  metadata: c.metadata,
});

const invoiceOf = (i: Stripe.Invoice) => ({
  id: i.id,
  status: i.status,
  customer: typeof i.customer === 'string' ? i.customer : (i.customer?.id ?? null),
  currency: i.currency,
  amount_due: i.amount_due,
  amount_paid: i.amount_paid,
  amount_remaining: i.amount_remaining,
  due_date: i.due_date ? new Date(i.due_date * 1000).toISOString() : null,
  hosted_invoice_url: i.hosted_invoice_url ?? null,
  lines: (i.lines?.data ?? []).map((l) => ({ description: l.description, amount: l.amount, currency: l.currency })),
});

export async function findCustomer(c: StripeConnection, input: { email: string }) {
  const list = await stripeCall(c, `find customers with ${input.email}`, (s) =>
    s.customers.list({ email: input.email, limit: 20 }),
  );
  return { customers: list.data.map(customerOf) };
}

export async function createCustomer(
  c: StripeConnection,
  input: { email: string; name?: string; description?: string; metadata?: Record<string, string> },
  ctx: ToolContext,
) {
  const customer = await stripeCall(c, `create a customer for ${input.email}`, (s) =>
    s.customers.create(
      { email: input.email, name: input.name, description: input.description, metadata: input.metadata },
      { idempotencyKey: idempotencyKey(ctx, 'customer') },
    ),
  );
  return customerOf(customer);
}

/**
 * The lines first, as the customer's pending invoice items, then the invoice that takes them in (Stripe's classic
 * flow, which every Stripe-compatible server speaks), then, if asked, finalizing it. Each write has a key of its own:
 * a step retried halfway adds no second line and no second invoice.
 */
export async function createInvoice(
  c: StripeConnection,
  input: {
    customer: string;
    currency: string;
    items: { description: string; amount: number }[];
    description?: string;
    days_until_due?: number;
    finalize: boolean;
    metadata?: Record<string, string>;
  },
  ctx: ToolContext,
) {
  const doing = `create an invoice for ${input.customer}`;
  for (const [i, item] of input.items.entries())
    await stripeCall(c, `${doing} (line ${i + 1})`, (s) =>
      s.invoiceItems.create(
        { customer: input.customer, currency: input.currency, amount: item.amount, description: item.description },
        { idempotencyKey: idempotencyKey(ctx, `invoice-line-${i}`) },
      ),
    );
  const draft = await stripeCall(c, doing, (s) =>
    s.invoices.create(
      {
        customer: input.customer,
        description: input.description,
        metadata: input.metadata,
        pending_invoice_items_behavior: 'include',
        // Stripe's default (charging the customer's payment method) needs no settings; sending it to pay does.
        ...(input.days_until_due !== undefined && {
          collection_method: 'send_invoice',
          days_until_due: input.days_until_due,
        }),
      },
      { idempotencyKey: idempotencyKey(ctx, 'invoice') },
    ),
  );
  const invoice = input.finalize
    ? await stripeCall(c, `finalize invoice ${draft.id}`, (s) =>
        s.invoices.finalizeInvoice(draft.id!, {}, { idempotencyKey: idempotencyKey(ctx, 'invoice-finalize') }),
      )
    : draft;
  return invoiceOf(invoice);
}

export async function getInvoice(c: StripeConnection, input: { invoice: string }) {
  return invoiceOf(await stripeCall(c, `read invoice ${input.invoice}`, (s) => s.invoices.retrieve(input.invoice)));
}

/** What was paid, for any of the three objects a payment is known by. */
export async function paymentStatus(c: StripeConnection, input: { id: string }) {
  const doing = `read ${input.id}`;
  if (input.id.startsWith('in_')) {
    const i = await stripeCall(c, doing, (s) => s.invoices.retrieve(input.id));
    return {
      id: i.id,
      object: 'invoice',
      status: i.status,
      paid: i.status === 'paid',
      amount: i.amount_due,
      amount_paid: i.amount_paid,
      currency: i.currency,
    };
  }
  if (input.id.startsWith('pi_')) {
    const pi = await stripeCall(c, doing, (s) => s.paymentIntents.retrieve(input.id));
    return {
      id: pi.id,
      object: 'payment_intent',
      status: pi.status,
      paid: pi.status === 'succeeded',
      amount: pi.amount,
      amount_paid: pi.amount_received,
      currency: pi.currency,
      failure: pi.last_payment_error?.message ?? null,
    };
  }
  const ch = await stripeCall(c, doing, (s) => s.charges.retrieve(input.id));
  return {
    id: ch.id,
    object: 'charge',
    status: ch.status,
    paid: ch.paid && ch.status === 'succeeded',
    amount: ch.amount,
    amount_paid: ch.captured ? ch.amount : 0,
    amount_refunded: ch.amount_refunded,
    currency: ch.currency,
    failure: ch.failure_message ?? null,
  };
}

export async function refund(
  c: StripeConnection,
  input: {
    payment: string;
    amount?: number;
    reason?: Stripe.RefundCreateParams.Reason;
    metadata?: Record<string, string>;
  },
  ctx: ToolContext,
) {
  const target = input.payment.startsWith('pi_') ? { payment_intent: input.payment } : { charge: input.payment };
  const r = await stripeCall(c, `refund ${input.payment}`, (s) =>
    s.refunds.create(
      { ...target, amount: input.amount, reason: input.reason, metadata: input.metadata },
      { idempotencyKey: idempotencyKey(ctx, 'refund') },
    ),
  );
  return {
    id: r.id,
    status: r.status,
    amount: r.amount,
    currency: r.currency,
    payment: input.payment,
  };
}
