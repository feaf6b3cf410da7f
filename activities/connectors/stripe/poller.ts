// Stripe's events (GET /v1/events) read by polling: the events of the kinds each connector event stands for, created
// since the cursor. The cursor is the newest `created` second seen and the event ids of that second (several events
// share a second; `created[gte]` asks for that second again and the ids drop the ones already reported). Listing
// by time rather than `ending_before` works whichever order a Stripe-compatible server lists in.
import type Stripe from 'stripe';
import { ApplicationFailure } from '@temporalio/common';
import type { EventBatch } from '../connector';
import { stripeCall, type StripeConnection } from './client';

interface Cursor {
  /** Unix seconds of the newest event seen. */
  created: number;
  /** The ids of the events of that second, already seen. */
  ids: string[];
}

/** A poll reads at most this many events; more since the last poll means the trigger fell far behind. */
const maxEvents = 10_000;

async function eventsSince(c: StripeConnection, types: readonly string[], since: number): Promise<Stripe.Event[]> {
  const events: Stripe.Event[] = [];
  for (const type of types)
    await stripeCall(c, `read its ${type} events`, async (s) => {
      for await (const event of s.events.list({ type, created: { gte: since }, limit: 100 })) {
        events.push(event);
        if (events.length > maxEvents)
          throw ApplicationFailure.nonRetryable(
            `connection "${c.name}" has more than ${maxEvents} ${types.join('/')} events since the last poll: pause and recreate the trigger to start from now`,
            'StripeTooManyEvents',
          );
      }
    });
  return events.sort((a, b) => a.created - b.created || a.id.localeCompare(b.id));
}

/** A poller of Stripe event types as one connector event; `toEvent` says what a run gets and its dedupe key. */
function eventPoller(
  types: readonly string[],
  toEvent: (e: Stripe.Event) => { id: string; data: Record<string, unknown> },
) {
  return async (c: StripeConnection, cursor: string | undefined): Promise<EventBatch> => {
    // The first poll looks a minute back (Stripe's clock and the workers' may differ) and counts all it finds as seen.
    const since: Cursor = cursor
      ? (JSON.parse(cursor) as Cursor)
      : { created: Math.floor(Date.now() / 1000) - 60, ids: [] };
    const seen = new Set(since.ids);
    const events = (await eventsSince(c, types, since.created)).filter((e) => !seen.has(e.id));
    const newest = events.at(-1)?.created ?? since.created;
    const next: Cursor = {
      created: newest,
      ids: [
        ...(newest === since.created ? since.ids : []),
        ...events.filter((e) => e.created === newest).map((e) => e.id),
      ],
    };
    return {
      // A new trigger starts from what happens after it: the first poll only sets the cursor.
      events: cursor
        ? events.map((e) => ({ ...toEvent(e), occurred_at: new Date(e.created * 1000).toISOString() }))
        : [],
      cursor: JSON.stringify(next),
    };
  };
}

const idOf = (x: string | { id?: string } | null | undefined) => (typeof x === 'string' ? x : (x?.id ?? null));

/**
 * Stripe sends both invoice.paid and invoice.payment_succeeded for a paid invoice (and only invoice.paid when it is
 * marked paid outside Stripe); Stripe-compatible servers may send only the older one. The invoice id is the
 * dedupe key, so either or both report it once.
 */
const invoicePaid = eventPoller(['invoice.paid', 'invoice.payment_succeeded'], (e) => {
  const invoice = e.data.object as Stripe.Invoice;
  return {
    id: `invoice:${invoice.id}`,
    data: {
      invoice: invoice.id,
      customer: idOf(invoice.customer),
      customer_email: invoice.customer_email ?? null,
      amount_paid: invoice.amount_paid,
      currency: invoice.currency,
      stripe_event: e.id,
    },
  };
});

/** Each failed attempt to collect a payment (an invoice's included: Stripe collects invoices with payment intents). */
const paymentFailed = eventPoller(['payment_intent.payment_failed'], (e) => {
  const pi = e.data.object as Stripe.PaymentIntent & { invoice?: string | null };
  return {
    id: e.id,
    data: {
      payment_intent: pi.id,
      customer: idOf(pi.customer),
      invoice: pi.invoice ?? null,
      amount: pi.amount,
      currency: pi.currency,
      error: pi.last_payment_error?.message ?? null,
      decline_code: pi.last_payment_error?.decline_code ?? pi.last_payment_error?.code ?? null,
      stripe_event: e.id,
    },
  };
});

export const stripePollers = { 'invoice.paid': invoicePaid, 'payment.failed': paymentFailed };
