// Every activity heartbeats while it works (activities/heartbeat.ts), so Temporal notices a lost worker within the
// heartbeat timeout and a cancelled run reaches its running activities. Run in Temporal's MockActivityEnvironment,
// with the heartbeat interval's clock mocked: no test waits the 2 s between heartbeats.
import assert from 'node:assert/strict';
import { mock } from 'node:test';
import { Context, type Info } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { heartbeatEveryMs, withHeartbeats } from '../../activities/heartbeat';

// The environment logs an activity's failure at WARN; these tests expect their failures.
const silent = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };
const mockEnv = (info: Partial<Info> = {}) => new MockActivityEnvironment(info, { logger: silent });

describe('activities: heartbeats (MockActivityEnvironment)', function () {
  beforeEach(() => mock.timers.enable({ apis: ['setInterval'] }));
  afterEach(() => mock.timers.reset());

  /** An activity that works until the test lets it finish, or until it is cancelled. */
  function heldActivity() {
    let finish!: (value: string) => void;
    const done = new Promise<string>((resolve) => (finish = resolve));
    const activities = withHeartbeats({
      async work(input: { seq: number }) {
        // Cancellation reaches the activity through its own Context: the wrapper runs it inside that context.
        return Promise.race([done.then((v) => `${v} ${input.seq}`), Context.current().cancelled]);
      },
    });
    return { work: activities.work, finish };
  }

  function recordHeartbeats(env: MockActivityEnvironment) {
    const beats: unknown[] = [];
    env.on('heartbeat', (details) => beats.push(details));
    return beats;
  }

  it('heartbeats every 2 s while the activity works, and stops when it has returned', async () => {
    const env = mockEnv();
    const beats = recordHeartbeats(env);
    const { work, finish } = heldActivity();
    const running = env.run(work, { seq: 7 });

    mock.timers.tick(heartbeatEveryMs - 1);
    assert.equal(beats.length, 0, 'no heartbeat at the start (a short step costs none)');
    mock.timers.tick(1);
    mock.timers.tick(heartbeatEveryMs * 2);
    assert.equal(beats.length, 3);

    finish('done');
    assert.equal(await running, 'done 7', 'the activity answers through the wrapper');
    mock.timers.tick(heartbeatEveryMs * 5);
    assert.equal(beats.length, 3, 'no heartbeat once it has returned');
  });

  it('a cancelled activity ends with the cancellation, and heartbeats no more', async () => {
    const env = mockEnv();
    const beats = recordHeartbeats(env);
    const { work } = heldActivity();
    const running = env.run(work, { seq: 1 });
    mock.timers.tick(heartbeatEveryMs);
    assert.equal(beats.length, 1);

    env.cancel();
    await assert.rejects(running, (err: unknown) => err instanceof CancelledFailure);
    mock.timers.tick(heartbeatEveryMs * 5);
    assert.equal(beats.length, 1);
  });

  it('a local activity does not heartbeat (its worker keeps the workflow task alive instead)', async () => {
    const env = mockEnv({ isLocal: true });
    const beats = recordHeartbeats(env);
    const { work, finish } = heldActivity();
    const running = env.run(work, { seq: 2 });
    mock.timers.tick(heartbeatEveryMs * 5);
    finish('done');
    assert.equal(await running, 'done 2');
    assert.equal(beats.length, 0);
  });

  it('an activity that fails fails through the wrapper, and heartbeats no more', async () => {
    const env = mockEnv();
    const beats = recordHeartbeats(env);
    const activities = withHeartbeats({
      async fail(): Promise<never> {
        throw new Error('the database is unreachable');
      },
    });
    await assert.rejects(env.run(activities.fail), /the database is unreachable/);
    mock.timers.tick(heartbeatEveryMs * 5);
    assert.equal(beats.length, 0);
  });
});
