import express, { type Request, type RequestHandler, type Response } from 'express';
import { ApiError } from './problem';

/** How deep a request's JSON may nest: far more than any agent spec or state value needs, far less than a stack holds. */
export const maxJsonDepth = 64;

/** A UTF-16 surrogate standing alone (in `u` mode a pair is one code point, outside this range). */
const loneSurrogate = /[\uD800-\uDFFF]/u;

/** What is wrong with a string or key as text the database can keep, if anything. */
function oddText(text: string): string | undefined {
  if (text.includes('\u0000')) return 'must not contain U+0000 (NUL bytes)';
  if (loneSurrogate.test(text)) return 'must be well-formed Unicode (a lone surrogate is no character)';
  return undefined;
}

/**
 * The first thing wrong with a value a request carries, by the one rule every body, upload field, query and path
 * parameter is held to: PostgreSQL text and jsonb cannot store U+0000, and jsonb no lone surrogate (JSON's `\ud800`
 * escape alone), so a string or object key holding one would fail at the insert (a 500) instead of being refused
 * here; and JSON nested without end would exhaust the stack of whatever walks it next (this walk stops at the limit).
 * The OpenAPI document says the text rule in every request schema (api/openapi.ts, withTextRule).
 */
function oddInput(value: unknown, path: string, depth = 1): { path: string; message: string } | undefined {
  if (typeof value === 'string') {
    const message = oddText(value);
    return message ? { path, message } : undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth > maxJsonDepth) return { path, message: `nests deeper than ${maxJsonDepth} levels` };
  for (const [key, item] of Object.entries(value)) {
    const odd = oddText(key);
    if (odd) return { path, message: `has an object key that ${odd}` };
    const found = oddInput(item, path ? `${path}.${key}` : key, depth + 1);
    if (found) return found;
  }
  return undefined;
}

/** A request body (or `path` in it) as oddInput checks it: 422 naming the field, shaped as parseBody's 422s. */
export function checkBody(body: unknown, path = ''): void {
  const odd = oddInput(body, path);
  if (!odd) return;
  const detail = `${odd.path || 'the body'}: ${odd.message}`;
  throw new ApiError(422, 'invalid_body', detail, {}, { errors: [{ path: odd.path, message: odd.message }] });
}

/** A query or path parameter as oddInput checks it: 422 `invalid_<name>`, the code a bad query value has. */
function checkParameter(where: 'query' | 'path', name: string, value: unknown): void {
  const odd = oddInput(value, name);
  if (odd) throw new ApiError(422, `invalid_${name}`, `${where} parameter ${name} ${odd.message}`);
}

/** The query (`req.query`) as oddInput checks it, before its zod object reads it (api/query-params.ts). */
export function checkQuery(query: unknown): void {
  for (const [name, value] of Object.entries(query ?? {})) checkParameter('query', name, value);
}

const parseJson = (limit: string) => express.json({ limit, strict: false });

/** 415 unless the body is JSON, then parses it with the configured size limit (413 beyond it) and checks it. */
export function jsonBody(limit: string): RequestHandler[] {
  return [
    (req, _res, next) => {
      if (!req.is('application/json')) {
        throw new ApiError(
          415,
          'unsupported_media_type',
          'send the body as JSON with "Content-Type: application/json"',
        );
      }
      next();
    },
    parseJson(limit),
    (req, _res, next) => {
      checkBody(req.body);
      next();
    },
  ];
}

/** The JSON body of a route that also takes other media types (an upload): parsed and checked as jsonBody does. */
export async function readJson(req: Request, res: Response, limit: string): Promise<unknown> {
  await new Promise<void>((resolve, reject) =>
    parseJson(limit)(req, res, (err?: unknown) => (err ? reject(err) : resolve())),
  );
  checkBody(req.body);
  return req.body;
}

// A body checked against its schema: a service's check, so services and routes refuse a bad body alike.
export { parseBody } from '../services/validation';

/** A path parameter as a string (Express 5 types them as string | string[] for wildcards), checked by oddInput. */
export const param = (req: Request, name: string): string => {
  const value = String(req.params[name]);
  checkParameter('path', name, value);
  return value;
};
