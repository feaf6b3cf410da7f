// A small REST API served over real HTTP from its own OpenAPI 3.0 document (at /openapi.json, as many APIs publish
// theirs), for the REST connector's tests: items to read, orders to place (bearer token, Idempotency-Key honoured),
// one operation whose answer breaks its own document, and a busy one that asks to be called again.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface InventoryApi {
  url: string;
  token: string;
  orders: { sku: string; quantity: number; idempotencyKey?: string }[];
  /** Requests received, in order (method, path with query, authorization header). */
  requests: { method: string; path: string; authorization?: string }[];
  close(): Promise<void>;
}

const items: Record<string, { sku: string; name: string; in_stock: number; price: number | null }> = {
  'SKU-1': { sku: 'SKU-1', name: 'Blue paint, 5 l', in_stock: 12, price: 39.9 },
  'SKU-2': { sku: 'SKU-2', name: 'Roller', in_stock: 0, price: null },
};

export function inventoryDocument(base: string) {
  return {
    openapi: '3.0.3',
    info: { title: 'Inventory', version: '1.4.0' },
    servers: [{ url: `${base}/v1` }],
    components: {
      schemas: {
        Item: {
          type: 'object',
          required: ['sku', 'name', 'in_stock'],
          properties: {
            sku: { type: 'string' },
            name: { type: 'string' },
            in_stock: { type: 'integer' },
            price: { type: 'number', nullable: true },
          },
        },
        Order: {
          type: 'object',
          required: ['sku', 'quantity'],
          properties: { sku: { type: 'string' }, quantity: { type: 'integer', minimum: 1 } },
        },
      },
    },
    paths: {
      '/items/{sku}': {
        parameters: [{ name: 'sku', in: 'path', required: true, schema: { type: 'string' } }],
        get: {
          operationId: 'getItem',
          summary: 'One item of the inventory, with its stock.',
          parameters: [{ name: 'fields', in: 'query', schema: { type: 'string' }, description: 'unused' }],
          responses: {
            '200': {
              description: 'the item',
              content: { 'application/json': { schema: { $ref: '#/components/schemas/Item' } } },
            },
            '404': { description: 'no such item' },
          },
        },
      },
      '/orders': {
        post: {
          operationId: 'createOrder',
          summary: 'Order more of an item.',
          requestBody: {
            required: true,
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Order' } } },
          },
          responses: {
            '201': {
              description: 'placed',
              content: {
                'application/json': {
                  schema: { type: 'object', required: ['order_id'], properties: { order_id: { type: 'integer' } } },
                },
              },
            },
          },
        },
      },
      '/broken': {
        get: {
          operationId: 'getBroken',
          summary: 'Answers something its document does not describe.',
          responses: {
            '200': {
              description: 'a count',
              content: {
                'application/json': {
                  schema: { type: 'object', required: ['count'], properties: { count: { type: 'integer' } } },
                },
              },
            },
          },
        },
      },
    },
  };
}

export async function startInventoryApi(): Promise<InventoryApi> {
  const token = 'inventory-token-77c2';
  const orders: InventoryApi['orders'] = [];
  const requests: InventoryApi['requests'] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const url = new URL(req.url!, 'http://x');
    requests.push({
      method: req.method!,
      path: `${url.pathname}${url.search}`,
      authorization: req.headers.authorization,
    });
    const json = (status: number, body: unknown) =>
      res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (url.pathname === '/openapi.json') return json(200, inventoryDocument(`http://${req.headers.host}`));
    const item = /^\/v1\/items\/([^/]+)$/.exec(url.pathname);
    if (req.method === 'GET' && item) {
      const found = items[decodeURIComponent(item[1])];
      return found ? json(200, found) : json(404, { error: `no item ${decodeURIComponent(item[1])}` });
    }
    if (req.method === 'POST' && url.pathname === '/v1/orders') {
      if (req.headers.authorization !== `Bearer ${token}`) return json(401, { error: 'a bearer token is required' });
      const order = JSON.parse(Buffer.concat(chunks).toString()) as { sku: string; quantity: number };
      const key = req.headers['idempotency-key'] as string | undefined;
      const seen = orders.findIndex((o) => key && o.idempotencyKey === key);
      if (seen < 0) orders.push({ ...order, idempotencyKey: key });
      return json(201, { order_id: (seen < 0 ? orders.length : seen + 1) + 500 });
    }
    if (req.method === 'GET' && url.pathname === '/v1/broken') return json(200, { count: 'many' });
    json(404, { error: 'no such route' });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    token,
    orders,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
