// A path the OpenAPI document lists answers a method it does not have with 405 and an Allow header, and OPTIONS
// with the same Allow: both come from the document, so they name exactly the documented methods (Express alone
// answers 404, and OPTIONS with whatever its routers happen to hold).
import type { RequestHandler } from 'express';
import { ApiError } from './problem';

export function allowedMethods(doc: { paths: Record<string, Record<string, unknown>> }): RequestHandler {
  // A concrete path is matched before a templated one (OpenAPI's rule): /agents/import before /agents/{id}.
  const templates = Object.entries(doc.paths)
    .map(([template, operations]) => ({
      params: (template.match(/\{\w+\}/g) ?? []).length,
      pattern: new RegExp(`^${template.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\\?\{\w+\\?\}/g, '[^/]+')}/?$`),
      allow: Object.keys(operations)
        .map((m) => m.toUpperCase())
        .join(', '),
    }))
    .sort((a, b) => a.params - b.params);

  return (req, res, next) => {
    const match = templates.find((t) => t.pattern.test(req.path));
    if (!match) return next();
    const methods = match.allow.split(', ');
    if (req.method === 'OPTIONS') {
      res.set('Allow', match.allow).status(204).end();
      return;
    }
    if (methods.includes(req.method) || (req.method === 'HEAD' && methods.includes('GET'))) return next();
    throw new ApiError(
      405,
      'method_not_allowed',
      `${req.method} is not a method of this path; it takes ${match.allow}`,
      { Allow: match.allow },
    );
  };
}
