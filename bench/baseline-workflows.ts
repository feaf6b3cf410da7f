// Raw Temporal doing the same number of trivial activities as a Cadre run has items, paged the same way
// (child workflows of 1,000, four at a time), so the two figures compare like with like.
import { executeChild, proxyActivities } from '@temporalio/workflow';

const { trivial } = proxyActivities<{ trivial(n: number): Promise<number> }>({ startToCloseTimeout: '1 minute' });

export async function baselinePage(from: number, to: number): Promise<number> {
  const window = 100;
  let done = 0;
  for (let i = from; i < to; i += window) {
    const batch = [];
    for (let j = i; j < Math.min(to, i + window); j++) batch.push(trivial(j));
    done += (await Promise.all(batch)).length;
  }
  return done;
}

export async function baselineRun(total: number, pageSize: number): Promise<number> {
  const pages = Math.ceil(total / pageSize);
  let next = 0;
  let done = 0;
  const running = new Set<Promise<void>>();
  while (next < pages || running.size > 0) {
    while (running.size < 4 && next < pages) {
      const page = next++;
      const p: Promise<void> = executeChild(baselinePage, {
        args: [page * pageSize, Math.min(total, (page + 1) * pageSize)],
      }).then((n) => {
        done += n;
        running.delete(p);
      });
      running.add(p);
    }
    await Promise.race(running);
  }
  return done;
}

/** The engine's own cost of a one-item run: one workflow, one trivial activity (bench:runs). */
export async function baselineOneActivity(n: number): Promise<number> {
  return trivial(n);
}
