// The attributes of a tool or connector call's span (OpenTelemetry GenAI `execute_tool`): which tool, of which
// connector, for which run and item. Never its arguments or result: they may hold the item's data or secrets.
import type { SpanAttributes } from '../../services/telemetry/tracing';

export function toolSpanAttributes(tool: string, runId: string, seq: number): SpanAttributes {
  const dot = tool.indexOf('.');
  return {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': tool,
    // The family before the first dot: http, email, state, a connector's kind (slack, stripe, …), mcp.
    'cadre.connector': dot > 0 ? tool.slice(0, dot) : undefined,
    'cadre.run.id': runId,
    'cadre.item.seq': seq,
  };
}
