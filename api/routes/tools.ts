// The catalogue of built-in tools: what an agent can call, what it touches and whether a call needs approval
// by default. The console's editor lists them with their approval policy.
import { Router } from 'express';
import { list, ref, type Route } from '../openapi-schemas';
import { z } from 'zod';
import { toolDefinitions } from '../../model/tools';
import type { ToolDefinition } from '../../model/tool-definition';
import { requirePermission } from '../auth';

export function toolRoutes(): Router {
  const r = Router();
  const catalogue = Object.values(toolDefinitions as Record<string, ToolDefinition>).map((t) => ({
    name: t.name,
    description: t.description,
    side_effect: t.sideEffect,
    approval_default: t.approvalDefault,
    input_schema: z.toJSONSchema(t.input, { io: 'input', unrepresentable: 'any' }),
  }));
  r.get('/tools', requirePermission('read'), (_req, res) => {
    res.json({ data: catalogue, next_cursor: null });
  });
  return r;
}

/** What these routes take and answer: their part of the OpenAPI document (api/openapi.ts). */
export const toolRouteDocs: Route[] = [
  {
    method: 'get',
    path: '/tools',
    id: 'listTools',
    summary: 'Built-in tools with their default approval',
    scope: 'read',
    ok: { 200: list(ref('Tool')) },
  },
];
