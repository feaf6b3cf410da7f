// The schedules the examples ship with (examples/schedules/) would run: each parses as a trigger and its input is
// read by its agent's input node into items, so no fire of a fresh install fails on its input.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parseInput } from '../../model/input-parsing';
import { parseAgentSpec } from '../../model/agent-checks';
import { scheduleInputOf } from '../../model/trigger';
import { exampleSchedules, examplesDir } from '../../db/seeds';

describe('example schedules', () => {
  const files = fs.readdirSync(path.join(examplesDir, 'schedules')).filter((f) => f.endsWith('.json'));

  it('at least one example ships with a schedule', () => {
    assert.ok(files.length >= 1);
  });

  for (const file of files) {
    it(`${file}: belongs to an example and its input is read by the example's input node`, () => {
      const spec = parseAgentSpec(JSON.parse(fs.readFileSync(path.join(examplesDir, file), 'utf8')));
      const schedules = exampleSchedules(file);
      assert.ok(schedules.length > 0);
      for (const s of schedules) {
        assert.equal(s.kind, 'schedule');
        if (s.kind !== 'schedule') continue;
        const input = scheduleInputOf(s);
        assert.ok(input, `${s.name} carries an input`);
        const node = spec.nodes[0];
        assert.equal(node.kind, 'input');
        if (node.kind !== 'input') continue;
        const items = parseInput(node, input);
        assert.ok(items.length > 0, `${s.name}: its input becomes items`);
      }
    });
  }
});
