// The shape of a tool's typed definition, in a module of its own: the built-in tools (./tools.ts) and the
// connectors' tools (./connectors/) are both written against it, and the tool table imports the connectors.
import type { z } from 'zod';

export type SideEffect = 'read' | 'state' | 'files' | 'external';

export interface ToolDefinition<S extends z.ZodTypeAny = z.ZodTypeAny> {
  name: string;
  description: string;
  input: S;
  /**
   * `state` tools touch only Cadre's own state store and run set-based; `files` ones write files into the run;
   * `external` ones reach other systems.
   */
  sideEffect: SideEffect;
  approvalDefault: 'always' | 'never';
  /** The default for one call, when its arguments decide it (`email.send` asks only when it sends as a mailbox). */
  approvalFor?: (args: unknown) => 'always' | 'never';
}
