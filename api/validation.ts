import express, { type Request, type RequestHandler } from 'express';
import type { z } from 'zod';
import { ApiError } from './problem';

/** 415 unless the body is JSON, then parses it with the configured size limit (413 beyond it). */
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
    express.json({ limit, strict: false }),
  ];
}

export function parseBody<T extends z.ZodTypeAny>(schema: T, body: unknown): z.infer<T> {
  const result = schema.safeParse(body);
  if (!result.success) {
    const issues = result.error.issues.map((i) => `${i.path.length ? i.path.join('.') + ': ' : ''}${i.message}`);
    throw new ApiError(
      422,
      'invalid_body',
      issues.join('; '),
      {},
      { errors: result.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })) },
    );
  }
  return result.data;
}

/** A path parameter as a string (Express 5 types them as string | string[] for wildcards). */
export const param = (req: Request, name: string): string => String(req.params[name]);
