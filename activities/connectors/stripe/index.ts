// The Stripe connector (model/connectors/stripe.ts) with the official `stripe` client: the check reads the
// account's balance with the key given, as a run would; the tools are in tools.ts, the event pollers in poller.ts.
import { stripeConnector } from '../../../model/connectors/stripe';
import { implement } from '../implementation';
import { stripeCall } from './client';
import { stripePollers } from './poller';
import { createCustomer, createInvoice, findCustomer, getInvoice, paymentStatus, refund } from './tools';

export const stripeImplementation = implement(stripeConnector, {
  async check(c) {
    const balance = await stripeCall(c, 'read its Stripe balance', (s) => s.balance.retrieve());
    const where = c.config.api_base ? `a Stripe-compatible server at ${new URL(c.config.api_base).host}` : 'Stripe';
    return { server_version: `${where} (${balance.livemode ? 'live' : 'test'} mode)` };
  },
  handlers: {
    'stripe.find_customer': (input, c) => findCustomer(c, input),
    'stripe.create_customer': (input, c, ctx) => createCustomer(c, input, ctx),
    'stripe.create_invoice': (input, c, ctx) => createInvoice(c, input, ctx),
    'stripe.get_invoice': (input, c) => getInvoice(c, input),
    'stripe.payment_status': (input, c) => paymentStatus(c, input),
    'stripe.refund': (input, c, ctx) => refund(c, input, ctx),
  },
  pollers: stripePollers,
});
