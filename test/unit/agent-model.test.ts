// The agent model: the shipped examples validate, graph problems are reported in words, policy defaults.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { agentSpecSchema, graphProblems, nodeSchema, policySchema, type AgentNode } from '../../model/agent';
import { parseAgentSpec } from '../../model/agent-checks';

const examplesDir = path.join(__dirname, '..', '..', 'examples');

function nodes(...specs: Record<string, unknown>[]): AgentNode[] {
  return specs.map((s) => nodeSchema.parse(s));
}
const input = (next?: string | null) => ({ kind: 'input', id: 'in', next });
const step = (id: string, next?: string | null) => ({ kind: 'transform', id, next });

describe('agent model', () => {
  describe('agentSpecSchema on examples/', () => {
    const files = fs.readdirSync(examplesDir).filter((f) => f.endsWith('.json'));

    it('there are example specs to check', () => {
      assert.ok(files.length >= 5, `expected the five shipped examples, found ${files.join(', ')}`);
    });

    for (const file of files) {
      it(`accepts ${file}`, () => {
        const raw = JSON.parse(fs.readFileSync(path.join(examplesDir, file), 'utf8'));
        const parsed = agentSpecSchema.safeParse(raw);
        assert.ok(parsed.success, `${file}: ${parsed.success ? '' : JSON.stringify(parsed.error.issues)}`);
        assert.equal(parsed.data.name, raw.name);
        assert.equal(parsed.data.nodes.length, raw.nodes.length);
        assert.equal(parsed.data.nodes[0].kind, 'input');
        assert.deepEqual(graphProblems(parsed.data.nodes), []);
      });
    }
  });

  describe('agentSpecSchema', () => {
    it('fills defaults for a minimal spec', () => {
      const spec = agentSpecSchema.parse({ name: 'Minimal', nodes: [{ kind: 'input', id: 'in' }] });
      assert.equal(spec.description, '');
      assert.equal(spec.instructions, '');
      assert.deepEqual(spec.sources, []);
      assert.deepEqual(spec.nodes, [{ kind: 'input', id: 'in', format: 'auto' }]);
      assert.deepEqual(spec.policy, policySchema.parse({}));
    });

    it('rejects a graph problem as an issue on "nodes" with the problem as message', () => {
      const parsed = agentSpecSchema.safeParse({
        name: 'Bad',
        nodes: [{ kind: 'input', id: 'in', next: 'nowhere' }],
      });
      assert.equal(parsed.success, false);
      const issues = parsed.error!.issues;
      assert.equal(issues.length, 1);
      assert.deepEqual(issues[0].path, ['nodes']);
      assert.equal(issues[0].message, 'node "in" points to "nowhere", which does not exist');
    });

    it('rejects node ids that are not lower-case identifiers', () => {
      assert.equal(nodeSchema.safeParse({ kind: 'input', id: 'In' }).success, false);
      assert.equal(nodeSchema.safeParse({ kind: 'input', id: '1st' }).success, false);
      assert.equal(nodeSchema.safeParse({ kind: 'input', id: 'a b' }).success, false);
      assert.equal(nodeSchema.safeParse({ kind: 'input', id: 'ok_id-2' }).success, true);
    });
  });

  describe('graphProblems', () => {
    it('reports nothing for a valid linear graph with a branch', () => {
      const graph = nodes(
        input('route'),
        {
          kind: 'branch',
          id: 'route',
          branches: [{ when: { field: 'x', op: 'exists' }, next: 'a' }],
          otherwise: 'b',
        },
        step('a', 'b'),
        step('b'),
      );
      assert.deepEqual(graphProblems(graph), []);
    });

    it('reports a duplicate id', () => {
      assert.deepEqual(graphProblems(nodes(input('a'), step('a'), step('a'))), ['node id "a" is used twice']);
    });

    it('reports a missing input node', () => {
      assert.deepEqual(graphProblems(nodes(step('a', 'b'), step('b'))), [
        'the graph needs exactly one "input" node, and it must come first',
      ]);
    });

    it('reports an extra input node', () => {
      assert.deepEqual(graphProblems(nodes(input('a'), step('a'), { kind: 'input', id: 'in2', next: 'a' })), [
        'the graph needs exactly one "input" node, and it must come first',
      ]);
    });

    it('reports an input node that is not first', () => {
      assert.deepEqual(graphProblems(nodes(step('a'), input('a'))), [
        'the graph needs exactly one "input" node, and it must come first',
      ]);
    });

    it('reports dangling next, branch and otherwise targets', () => {
      const graph = nodes(input('route'), {
        kind: 'branch',
        id: 'route',
        branches: [{ when: { field: 'x', op: 'exists' }, next: 'ghost' }],
        otherwise: 'phantom',
      });
      assert.deepEqual(graphProblems(graph), [
        'node "route" points to "ghost", which does not exist',
        'node "route" points to "phantom", which does not exist',
      ]);
    });

    it('reports unreachable nodes', () => {
      assert.deepEqual(graphProblems(nodes(input('a'), step('a'), step('island'), step('far', 'island'))), [
        'node "island" cannot be reached from the input node',
        'node "far" cannot be reached from the input node',
      ]);
    });

    it('reports a cycle naming its path', () => {
      assert.deepEqual(graphProblems(nodes(input('a'), step('a', 'b'), step('b', 'a'))), [
        'the graph has a cycle: a → b → a',
      ]);
    });

    it('reports a longer cycle from the node where it starts, and a self-loop', () => {
      assert.deepEqual(graphProblems(nodes(input('a'), step('a', 'b'), step('b', 'c'), step('c', 'b'))), [
        'the graph has a cycle: b → c → b',
      ]);
      assert.deepEqual(graphProblems(nodes(input('a'), step('a', 'a'))), ['the graph has a cycle: a → a']);
    });

    it('reports a cycle through a branch', () => {
      const graph = nodes(
        input('check'),
        {
          kind: 'branch',
          id: 'check',
          branches: [{ when: { field: 'retry', op: 'exists' }, next: 'fix' }],
          otherwise: null,
        },
        step('fix', 'check'),
      );
      assert.deepEqual(graphProblems(graph), ['the graph has a cycle: check → fix → check']);
    });

    it('does not call a diamond (two paths to one node) a cycle', () => {
      const graph = nodes(
        input('route'),
        {
          kind: 'branch',
          id: 'route',
          branches: [{ when: { field: 'x', op: 'exists' }, next: 'a' }],
          otherwise: 'b',
        },
        step('a', 'end'),
        step('b', 'end'),
        step('end'),
      );
      assert.deepEqual(graphProblems(graph), []);
    });
  });

  describe('SQL statements of tool nodes', () => {
    const agentQuerying = (tool: string, connection: string, sql: string) => ({
      name: 'q',
      connections: [connection],
      nodes: [
        { kind: 'input', id: 'in', format: 'json', next: 'q' },
        { kind: 'tool', id: 'q', tool, arguments: { connection, sql } },
      ],
    });
    for (const [tool, connection] of [
      ['sql.query', 'shop'],
      ['duckdb.query', 'warehouse'],
    ])
      it(`refuses item values pasted into ${tool}'s statement, and says to use params`, () => {
        assert.throws(
          () => parseAgentSpec(agentQuerying(tool, connection, "select * from t where id = '{{id}}'")),
          /puts \{\{…\}\} into its SQL: write \? in the statement and the values in "params"/,
        );
        assert.doesNotThrow(() => parseAgentSpec(agentQuerying(tool, connection, 'select * from t where id = ?')));
      });
  });

  describe('policySchema defaults', () => {
    it('fills every default from an empty object', () => {
      assert.deepEqual(policySchema.parse({}), {
        approvals: {},
        approval_timeout_seconds: 86_400,
        on_approval_timeout: 'escalate',
        error_policy: { retries: 0, on_item_failure: 'continue' },
        concurrency: 10,
        public_access: false,
      });
    });

    it('fills error_policy defaults inside a partial error_policy', () => {
      assert.deepEqual(policySchema.parse({ error_policy: { retries: 3 } }).error_policy, {
        retries: 3,
        on_item_failure: 'continue',
      });
    });

    it('rejects out-of-range values', () => {
      assert.equal(policySchema.safeParse({ concurrency: 0 }).success, false);
      assert.equal(policySchema.safeParse({ concurrency: 501 }).success, false);
      assert.equal(policySchema.safeParse({ error_policy: { retries: 11 } }).success, false);
      assert.equal(policySchema.safeParse({ approval_timeout_seconds: 0 }).success, false);
      assert.equal(policySchema.safeParse({ on_approval_timeout: 'ignore' }).success, false);
    });
  });
});
