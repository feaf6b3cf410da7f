import type { z } from 'zod';
import { ApiError } from './errors';

/** `body` as `schema` reads it, or a 422 `invalid_body` problem naming each field that is wrong. */
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
