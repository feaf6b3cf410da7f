// A REST API's OpenAPI 3.x document, and the operations in it as tools: each operation's parameters and JSON body
// become one input schema (local $refs inlined, 3.0's `nullable` as JSON Schema's null type), and its success answer
// the schema an answer is checked against. Pure: the API describes a stored document with it, the worker calls its
// operations (activities/connectors/openapi/ fetches documents and makes the calls).
import type { OpenApiConfig } from './connection';

export type Json = Record<string, unknown>;
const methods = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

export class OpenApiDocumentError extends Error {}

export interface OpenApiParameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
}

export interface OpenApiOperation {
  id: string;
  method: (typeof methods)[number];
  path: string;
  description: string;
  parameters: OpenApiParameter[];
  hasBody: boolean;
  inputSchema: { type: 'object'; properties: Record<string, unknown>; required: string[] };
  /** The JSON schema of each documented answer, by status (`200`, `2XX`, `default`). */
  answers: Record<string, unknown>;
}

/** `#/components/schemas/X` and the like, inlined; a reference to itself (a recursive schema) becomes `{}`. */
function inline(value: unknown, doc: Json, seen: readonly string[] = []): unknown {
  if (Array.isArray(value)) return value.map((v) => inline(v, doc, seen));
  if (!value || typeof value !== 'object') return value;
  const obj = value as Json;
  if (typeof obj.$ref === 'string') {
    const ref = obj.$ref;
    if (!ref.startsWith('#/') || seen.includes(ref)) return {};
    const target = ref
      .slice(2)
      .split('/')
      .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((o, k) => (o as Json | undefined)?.[k], doc);
    if (target === undefined) throw new OpenApiDocumentError(`the document refers to ${ref}, which it does not have`);
    return inline(target, doc, [...seen, ref]);
  }
  const out: Json = {};
  for (const [k, v] of Object.entries(obj)) out[k] = inline(v, doc, seen);
  // OpenAPI 3.0 marks a nullable schema apart; JSON Schema (3.1, and the model's tools) says it in `type`.
  if (out.nullable === true && typeof out.type === 'string') out.type = [out.type, 'null'];
  delete out.nullable;
  return out;
}

const jsonSchemaOf = (content: unknown): unknown =>
  (content as Record<string, { schema?: unknown }> | undefined)?.['application/json']?.schema;

/** The operations of a 3.x document (only `chosen` ones, in that order, when given), each with the tool input it takes. */
export function openApiOperations(doc: Json, chosen?: readonly string[]): OpenApiOperation[] {
  if (typeof doc.openapi !== 'string' || !doc.openapi.startsWith('3.'))
    throw new OpenApiDocumentError('not an OpenAPI 3.x document (its "openapi" field must be 3.0 or 3.1)');
  if (!doc.paths || typeof doc.paths !== 'object') throw new OpenApiDocumentError('the document has no "paths"');
  const all: OpenApiOperation[] = [];
  for (const [path, rawItem] of Object.entries(doc.paths as Json)) {
    const item = inline(rawItem, doc) as Json;
    for (const method of methods) {
      const op = item[method] as Json | undefined;
      if (!op) continue;
      const id =
        typeof op.operationId === 'string' ? op.operationId : `${method}_${path.replace(/[^A-Za-z0-9]+/g, '_')}`;
      const params = new Map<string, Json>();
      for (const p of [...((item.parameters as Json[]) ?? []), ...((op.parameters as Json[]) ?? [])])
        if (['path', 'query', 'header'].includes(String(p.in))) params.set(`${p.in}:${p.name}`, p);
      const properties: Record<string, unknown> = {};
      const required: string[] = [];
      const parameters: OpenApiParameter[] = [];
      for (const p of params.values()) {
        const name = String(p.name);
        const isRequired = p.in === 'path' || p.required === true;
        parameters.push({ name, in: p.in as OpenApiParameter['in'], required: isRequired });
        properties[name] = { ...((p.schema as Json) ?? {}), ...(p.description ? { description: p.description } : {}) };
        if (isRequired) required.push(name);
      }
      const body = op.requestBody as Json | undefined;
      const bodySchema = jsonSchemaOf(body?.content);
      if (bodySchema) {
        properties.body = bodySchema;
        if (body?.required) required.push('body');
      }
      const answers: Record<string, unknown> = {};
      for (const [status, answer] of Object.entries((op.responses as Json) ?? {})) {
        const schema = jsonSchemaOf((answer as Json).content);
        if (schema) answers[status] = schema;
      }
      all.push({
        id,
        method,
        path,
        description: String(op.summary ?? op.description ?? `${method.toUpperCase()} ${path}`).slice(0, 1000),
        parameters,
        hasBody: bodySchema !== undefined,
        inputSchema: { type: 'object', properties, required },
        answers,
      });
    }
  }
  if (!chosen) return all;
  const missing = chosen.filter((id) => !all.some((op) => op.id === id));
  if (missing.length > 0)
    throw new OpenApiDocumentError(`the document has no operation ${missing.map((m) => `"${m}"`).join(', ')}`);
  return chosen.map((id) => all.find((op) => op.id === id)!);
}

/** A stored document in a few words, for listing connections (the document itself can be megabytes). */
export interface OpenApiSummary {
  title: string | null;
  version: string | null;
  /** The operations the document describes (the connection's tools are those of `config.operations`). */
  operation_count: number;
  /** Its first server, relative to where it was fetched; null when it names none. */
  server_url: string | null;
}

export function openApiSummary(doc: Json | undefined, documentUrl?: string): OpenApiSummary {
  const info = (doc?.info ?? {}) as Json;
  const text = (v: unknown) => (typeof v === 'string' ? v : null);
  let operationCount = 0;
  for (const item of Object.values((doc?.paths ?? {}) as Json))
    if (item && typeof item === 'object') operationCount += methods.filter((m) => m in item).length;
  const server = text(((doc?.servers as Json[] | undefined) ?? [])[0]?.url);
  let serverUrl = server;
  try {
    if (server !== null) serverUrl = new URL(server, documentUrl).href;
  } catch {
    // a relative server of a pasted document: shown as it is written
  }
  return {
    title: text(info.title),
    version: text(info.version),
    operation_count: operationCount,
    server_url: serverUrl,
  };
}

const isAbsoluteUrl = (url: string) => URL.canParse(url);

/**
 * The API's address. A document's first server, when absolute; a relative one (`/api/v3`, as the Petstore's) is
 * relative to where the document was fetched, as OpenAPI says, and to `base_url` when the document was given
 * inline. The connection's `base_url` otherwise replaces the document's server: `https://h.example/api/v3` is used
 * as it is; one that is only an origin (`https://h.example`) takes the relative server's path
 * (`https://h.example/api/v3`), so a pasted document needs only its host.
 */
export function openApiBaseUrl(config: OpenApiConfig): string {
  const first = ((config.document?.servers as Json[] | undefined) ?? [])[0];
  // Its variables (`https://{region}.api.example.com`) at their defaults.
  const variables = (first?.variables ?? {}) as Record<string, { default?: unknown }>;
  const server =
    typeof first?.url === 'string' && first.url.trim() !== ''
      ? first.url
          .trim()
          .replace(/\{([^}]+)\}/g, (m, name: string) =>
            typeof variables[name]?.default === 'string' ? String(variables[name].default) : m,
          )
      : undefined;
  const relative = server !== undefined && !isAbsoluteUrl(server);
  let base: string;
  if (config.base_url) {
    const given = new URL(config.base_url);
    base =
      relative && given.pathname === '/' && !given.search ? new URL(server, `${given.origin}/`).href : config.base_url;
  } else if (server === undefined) {
    throw new OpenApiDocumentError('the document names no server: give the connection a "base_url"');
  } else if (!relative) {
    base = server;
  } else if (config.document_url && URL.canParse(server, config.document_url)) {
    base = new URL(server, config.document_url).href;
  } else if (config.document_url) {
    throw new OpenApiDocumentError(`the document's server "${server}" is not a URL: give the connection a "base_url"`);
  } else {
    throw new OpenApiDocumentError(
      `the document's server is relative (${server}): set base_url to the API's host (e.g. https://api.example.com, ` +
        `to which ${server} is added) or its whole address`,
    );
  }
  return base.replace(/\/$/, '');
}
