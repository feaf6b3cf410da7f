// The Stripe connector through the official `stripe` client against localstripe, a stateful Stripe-compatible
// server: customers and invoices made and refunds given only once a reviewer approves, each exactly once however
// often its step runs, payment status read back, and paid and failed payments reported to event triggers.
//
// localstripe ignores Idempotency-Key and never answers 429, so the connection goes through a proxy
// (test/support/stripe-proxy.ts) that records each request's key and does what Stripe does with it: the first
// answer for a key is the answer to every repeat. localstripe also has no /finalize and no send_invoice
// settings, so create_invoice's finalize and days_until_due are not exercised here; and it makes invoices only for
// customers with a subscription (a standalone invoice answers 404 "No upcoming invoices"), so the invoiced
// customers here are on a free monthly plan, whose 0.00 line their invoices show besides the tool's lines.
import assert from 'node:assert/strict';
import Stripe from 'stripe';
import { connectorImplementations } from '../../../activities/connectors';
import type { OpenedConnection } from '../../../activities/connectors/connector';
import { createHarness, createTestWorkspace, items, startApi, waitForRun, type Harness } from '../../support/harness';
import { connectorApi, type ConnectorApi, type Json } from '../../support/connections';
import { startLocalstripe } from '../../support/localstripe';
import type { PyServer } from '../../support/pyserver';
import { startStripeProxy, type StripeProxy } from '../../support/stripe-proxy';

const secretKey = 'sk_test_cadre_51Hx9ZpQ2';

describe('connectors: Stripe', function () {
  this.timeout(180_000);
  let localstripe: PyServer;
  let proxy: StripeProxy;
  /** Stripe as the business and its customers use it, straight to localstripe: to set up and to check. */
  let stripe: Stripe;
  let h: Harness;
  let api: Awaited<ReturnType<typeof startApi>>;
  let c: ConnectorApi;

  before(async () => {
    localstripe = await startLocalstripe();
    proxy = await startStripeProxy(localstripe.url);
    stripe = new Stripe(secretKey, { host: '127.0.0.1', port: localstripe.port, protocol: 'http', telemetry: false });
    h = await createHarness({ config: { http: { allowHosts: ['127.0.0.1'] } } as never });
    api = await startApi(h);
    const t = await createTestWorkspace(h);
    c = connectorApi(h, api.url, t.key, t.workspace.id);
  });
  after(async () => {
    await api?.close();
    await h?.close();
    await proxy?.close();
    await localstripe?.stop();
  });

  const customersWith = async (email: string) => (await stripe.customers.list({ email, limit: 100 })).data;

  /** A customer on a free plan (see above) paying with a card: 4242… pays, 4000000000000341 is declined. */
  async function billableCustomer(email: string, cardNumber = '4242424242424242') {
    const customer = await stripe.customers.create({ email });
    const product = await stripe.products.create({ name: 'Account' });
    const plan = await stripe.plans.create({ amount: 0, currency: 'eur', interval: 'month', product: product.id });
    await stripe.subscriptions.create({ customer: customer.id, items: [{ plan: plan.id }] } as never);
    const card = await stripe.paymentMethods.create({
      type: 'card',
      card: { number: cardNumber, exp_month: 12, exp_year: 2040, cvc: '123' },
    } as Stripe.PaymentMethodCreateParams);
    await stripe.paymentMethods.attach(card.id, { customer: customer.id });
    return stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: card.id } });
  }
  const linesOf = (invoice: Stripe.Invoice) =>
    invoice.lines.data.filter((l) => l.amount !== 0).map((l) => [l.description, l.amount, l.currency]);

  /** One tool node on each input item; `policy` to let writes through without a reviewer, or retry them. */
  const toolAgent = (tool: string, args: Json, policy: Json = {}) => ({
    name: `stripe ${tool}`,
    connections: ['billing'],
    policy,
    nodes: [
      { kind: 'input', id: 'in', format: 'json', next: 'call' },
      { kind: 'tool', id: 'call', tool, arguments: { connection: 'billing', ...args }, save_as: 'out' },
    ],
  });
  async function runTool(tool: string, args: Json, input: unknown[] = [{}], policy: Json = {}) {
    const { started } = await c.runOf(toolAgent(tool, args, policy), input);
    await waitForRun(h, started.id);
    return items(h, started.id);
  }
  /** Runs a write, approves it once its approval comes, and answers its item. */
  async function approved(tool: string, args: Json, check: () => Promise<void> = async () => undefined) {
    const { started } = await c.runOf(toolAgent(tool, args), [{}]);
    const pending = await c.waitForApproval(started.id);
    assert.equal(pending.tool, tool);
    await check();
    await c.decide(pending.id, 'approve');
    await waitForRun(h, started.id);
    return (await items(h, started.id))[0];
  }
  const unattended = (...tools: string[]) => ({
    approvals: Object.fromEntries(tools.map((t) => [t, { mode: 'never' }])),
    error_policy: { retries: 3 },
  });

  it('refuses a key Stripe refuses and an internal address, and keeps the key sealed', async () => {
    const publishable = 'pk_test_TYooMQauvdEDq54NiTphI7jx';
    const refused = await c.call('POST', '/connections', {
      name: 'wrong',
      kind: 'stripe',
      config: { api_base: proxy.url },
      credentials: { secret_key: publishable },
    });
    assert.equal(refused.status, 422, JSON.stringify(refused.body));
    assert.match(refused.body.detail, /Stripe refused its secret key \(401\): give a secret key \(sk_…\)/);
    assert.doesNotMatch(JSON.stringify(refused.body), /TYooMQ/);

    const internal = await c.call('POST', '/connections', {
      name: 'internal',
      kind: 'stripe',
      config: { api_base: proxy.url.replace('127.0.0.1', '127.0.0.2') },
      credentials: { secret_key: secretKey },
    });
    assert.equal(internal.status, 422);
    assert.match(internal.body.detail, /private or internal address; add the host to CADRE_HTTP_ALLOW_HOSTS/);

    const made = await c.connect(
      'billing',
      'stripe',
      { api_base: proxy.url, account_name: 'Acme EU' },
      {
        secret_key: secretKey,
      },
    );
    const tested = await c.call('POST', `/connections/${made.id}/test`);
    assert.equal(tested.body.ok, true, JSON.stringify(tested.body));
    assert.match(tested.body.server_version, /^a Stripe-compatible server at 127\.0\.0\.1:\d+ \(test mode\)$/);
    const shown = await c.call('GET', `/connections/${made.id}`);
    assert.doesNotMatch(JSON.stringify([made, tested.body, shown.body]), /sk_test_cadre/);
    const row = await h.stack.knex('connections').where({ id: made.id }).first();
    assert.doesNotMatch(JSON.stringify(row), /sk_test_cadre/, 'sealed at rest');

    const connectors = await c.call('GET', '/connectors');
    const definition = connectors.body.data.find((k: Json) => k.kind === 'stripe');
    assert.deepEqual(
      definition.tools.map((t: Json) => [t.name, t.approval_default]),
      [
        ['stripe.find_customer', 'never'],
        ['stripe.create_customer', 'always'],
        ['stripe.create_invoice', 'always'],
        ['stripe.get_invoice', 'never'],
        ['stripe.payment_status', 'never'],
        ['stripe.refund', 'always'],
      ],
    );
    assert.deepEqual(
      definition.events.map((e: Json) => e.name),
      ['invoice.paid', 'payment.failed'],
    );
  });

  it('creates a customer only once a reviewer approves, and none when rejected', async () => {
    const row = await approved('stripe.create_customer', { email: 'ada@example.com', name: 'Ada' }, async () =>
      assert.deepEqual(await customersWith('ada@example.com'), [], 'nothing before approval'),
    );
    assert.equal(row.status, 'done', row.error);
    const [customer] = await customersWith('ada@example.com');
    assert.equal(row.data.out.id, customer.id);
    assert.equal(customer.name, 'Ada');

    const { started } = await c.runOf(toolAgent('stripe.create_customer', { email: 'eve@example.com' }), [{}]);
    await c.decide((await c.waitForApproval(started.id)).id, 'reject');
    await waitForRun(h, started.id);
    assert.deepEqual(await customersWith('eve@example.com'), []);

    const [found] = await runTool('stripe.find_customer', { email: 'ada@example.com' });
    assert.deepEqual(
      found.data.out.customers.map((x: Json) => [x.id, x.name]),
      [[customer.id, 'Ada']],
    );
  });

  it('a step retried after its answer was lost creates one customer, with one key per step', async () => {
    proxy.loseAnswers('POST', '/v1/customers', 2); // the client's own retry is lost too: the step fails and reruns
    const from = proxy.requests.length;
    const rows = await runTool(
      'stripe.create_customer',
      { email: '{{email}}' },
      [{ email: 'grace@example.com' }, { email: 'linus@example.com' }],
      { ...unattended('stripe.create_customer'), concurrency: 1 }, // the first item's answers are the lost ones
    );
    assert.deepEqual(
      rows.map((r) => r.status),
      ['done', 'done'],
      JSON.stringify(rows.map((r) => r.error)),
    );
    const grace = await customersWith('grace@example.com');
    assert.equal(grace.length, 1, 'one customer however often the step ran');
    assert.equal(rows[0].data.out.id, grace[0].id);
    assert.equal((await customersWith('linus@example.com')).length, 1);

    const posts = proxy.requests.slice(from).filter((r) => r.method === 'POST' && r.path === '/v1/customers');
    const keys = new Map<string, RecordedAnswers>();
    for (const p of posts) keys.set(p.idempotencyKey!, [...(keys.get(p.idempotencyKey!) ?? []), p.answer]);
    assert.equal(keys.size, 2, 'one key per item, the same on every try');
    assert.deepEqual(
      [...keys.values()],
      [['lost', 'lost', 200], [200]],
      "the first item's answer was lost to the client's own retry too, and the step's retry got it",
    );
  });

  type RecordedAnswers = (number | 'lost')[];

  describe('invoices and payments', () => {
    let customer: Stripe.Customer;
    let invoiceId: string;

    before(async () => {
      customer = await billableCustomer('billing@initech.example');
    });

    const invoiceArgs = () => ({
      customer: customer.id,
      currency: 'EUR',
      description: 'November',
      items: [
        { description: 'Consulting, 3 h', amount: 45000 },
        { description: 'Travel', amount: 2350 },
      ],
    });
    /** The customer's invoices but the free plan's first one. */
    const invoicesOf = async (id: string) =>
      (await stripe.invoices.list({ customer: id, limit: 100 })).data.filter((i) => i.total !== 0);

    it('creates an invoice with its lines once approved, and once however often a step retries', async () => {
      const row = await approved('stripe.create_invoice', invoiceArgs(), async () =>
        assert.deepEqual(await invoicesOf(customer.id), [], 'nothing before approval'),
      );
      assert.equal(row.status, 'done', row.error);
      const [invoice] = await invoicesOf(customer.id);
      invoiceId = invoice.id!;
      assert.equal(row.data.out.id, invoiceId);
      assert.equal(row.data.out.status, 'draft');
      assert.equal(row.data.out.amount_due, 47350);
      assert.deepEqual(linesOf(invoice), [
        ['Consulting, 3 h', 45000, 'eur'],
        ['Travel', 2350, 'eur'],
      ]);

      // A second customer's invoice whose last write's answer is lost: the rerun adds no line and no invoice.
      const other = await billableCustomer('ap@umbrella.example');
      proxy.loseAnswers('POST', '/v1/invoices', 2);
      const from = proxy.requests.length;
      const [retried] = await runTool(
        'stripe.create_invoice',
        { ...invoiceArgs(), customer: other.id },
        [{}],
        unattended('stripe.create_invoice'),
      );
      assert.equal(retried.status, 'done', retried.error);
      const invoices = await invoicesOf(other.id);
      assert.equal(invoices.length, 1, 'one invoice');
      assert.equal(linesOf(invoices[0]).length, 2, 'each line once');
      assert.equal(invoices[0].total, 47350);
      // localstripe lists only pending invoice items: a line made twice would wait here for the next invoice.
      assert.deepEqual((await stripe.invoiceItems.list({ customer: other.id })).data, [], 'no line made twice');
      const linePosts = proxy.requests.slice(from).filter((r) => r.path === '/v1/invoiceitems');
      assert.deepEqual(
        linePosts.map((r) => r.replayed),
        [false, false, true, true],
        "the rerun sent each line's key again",
      );
      assert.equal(new Set(linePosts.map((r) => r.idempotencyKey)).size, 2);
    });

    it('reads an invoice and its payment status before and after the customer pays', async () => {
      const [before] = await runTool('stripe.payment_status', { id: invoiceId });
      assert.deepEqual(
        [before.data.out.object, before.data.out.status, before.data.out.paid],
        ['invoice', 'draft', false],
      );
      await stripe.invoices.pay(invoiceId);
      const [read] = await runTool('stripe.get_invoice', { invoice: invoiceId });
      assert.equal(read.status, 'done', read.error);
      assert.deepEqual(
        [read.data.out.status, read.data.out.amount_paid, read.data.out.currency],
        ['paid', 47350, 'eur'],
      );
      const [after] = await runTool('stripe.payment_status', { id: invoiceId });
      assert.equal(after.data.out.paid, true);

      const [missing] = await runTool('stripe.get_invoice', { invoice: 'in_doesnotexist' });
      assert.equal(missing.status, 'failed');
      // Stripe says "No such invoice: 'in_doesnotexist'"; localstripe only "Not Found".
      assert.match(
        missing.error,
        /connection "billing" could not read invoice in_doesnotexist: (Not Found|No such invoice)/,
      );
    });

    it('refunds part of a payment once approved, once', async () => {
      const paymentIntent = ((await stripe.invoices.retrieve(invoiceId)) as unknown as { payment_intent: string })
        .payment_intent;
      const refundsOf = async () => (await stripe.refunds.list({ payment_intent: paymentIntent })).data;
      const row = await approved('stripe.refund', { payment: paymentIntent, amount: 2350 }, async () =>
        assert.deepEqual(await refundsOf(), [], 'nothing before approval'),
      );
      assert.equal(row.status, 'done', row.error);
      assert.deepEqual(
        (await refundsOf()).map((r) => [r.id, r.amount]),
        [[row.data.out.id, 2350]],
      );
      const [status] = await runTool('stripe.payment_status', { id: paymentIntent });
      assert.deepEqual([status.data.out.object, status.data.out.status], ['payment_intent', 'succeeded']);
    });

    it('waits out a 429 as Retry-After asks, then answers', async () => {
      const from = proxy.requests.length;
      proxy.throttle(2, 1);
      const [found] = await runTool('stripe.find_customer', { email: 'billing@initech.example' });
      assert.equal(found.status, 'done', found.error);
      assert.equal(found.data.out.customers[0].id, customer.id);
      assert.deepEqual(
        proxy.requests.slice(from).map((r) => r.answer),
        [429, 429, 200],
      );
    });
  });

  describe('events', () => {
    const opened = (): OpenedConnection => ({
      name: 'billing',
      kind: 'stripe',
      config: { api_base: proxy.url },
      credentials: { secret_key: secretKey },
      version: 'test:events',
      limits: { allowHosts: ['127.0.0.1'] },
    });
    const pollers = () => connectorImplementations.stripe.pollers!;

    /** The customer pays an invoice by card. */
    async function invoicePaid(email: string) {
      const customer = await billableCustomer(email);
      await stripe.invoiceItems.create({ customer: customer.id, amount: 9900, currency: 'eur', description: 'Plan' });
      const invoice = await stripe.invoices.create({ customer: customer.id });
      await stripe.invoices.pay(invoice.id!);
      return invoice.id!;
    }
    /** A card payment the bank declines (localstripe reports a declined invoice payment with no event at all). */
    async function paymentDeclined(email: string) {
      const customer = await billableCustomer(email, '4000000000000341');
      const card = customer.invoice_settings?.default_payment_method;
      await assert.rejects(
        stripe.paymentIntents.create({
          amount: 4200,
          currency: 'eur',
          customer: customer.id,
          payment_method: typeof card === 'string' ? card : card!.id,
          confirm: true,
        }),
        /declined/i,
      );
      return customer.id;
    }

    it('reports each paid invoice and each failed payment once, from when the trigger started', async () => {
      const paid = pollers()['invoice.paid'];
      const failed = pollers()['payment.failed'];
      const [paidStart, failedStart] = [await paid(opened(), undefined), await failed(opened(), undefined)];
      assert.deepEqual([paidStart.events, failedStart.events], [[], []], 'the history is not news');

      const good = await invoicePaid('pays@example.com');
      const declined = await paymentDeclined('declined@example.com');

      const paidBatch = await paid(opened(), paidStart.cursor);
      assert.deepEqual(
        paidBatch.events.map((e) => [e.id, e.data.invoice, e.data.amount_paid, e.data.currency]),
        [[`invoice:${good}`, good, 9900, 'eur']],
      );
      const failedBatch = await failed(opened(), failedStart.cursor);
      assert.equal(failedBatch.events.length, 1);
      assert.deepEqual([failedBatch.events[0].data.customer, failedBatch.events[0].data.amount], [declined, 4200]);
      assert.match(String(failedBatch.events[0].data.error), /declined/i);

      assert.deepEqual((await paid(opened(), paidBatch.cursor)).events, [], 'reported once');
      assert.deepEqual((await failed(opened(), failedBatch.cursor)).events, [], 'reported once');
    });
  });
});
