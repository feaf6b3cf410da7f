// `npm run bench:console`: how long each console page takes to answer, over real HTTP, as a signed-in owner sees
// it: the server load (the API calls it makes) and the server-side render, i.e. until the HTML has arrived. The stack
// is the tests' (Temporal dev server, embedded Postgres, a worker) with the shipped example agents and a run of 50
// invoice rows waiting on approvals. Prints figures (never asserted); the last line is one JSON object.
import { mochaGlobalTeardown } from '../test/support/global';
import { createHarness, startTestRun, waitForRun } from '../test/support/harness';
import { startWebWithConsole } from '../test/support/browser';
import { memberWithRole } from '../test/support/people';
import { loadSecretBox } from '../db/secret-box';
import { seedDemoWorkspace } from '../db/seeds';
import { percentile } from './support';

const rounds = Number(process.env.BENCH_ROUNDS ?? 7);

async function main() {
  const h = await createHarness();
  const seed = (await seedDemoWorkspace(h.stack.knex))!;
  const web = await startWebWithConsole(h, { secrets: loadSecretBox(h.config) });
  const owner = await memberWithRole(h.stack.knex, web.base, seed.workspaceId, 'owner');
  const cookie = [...owner.cookies].map(([k, v]) => `${k}=${v}`).join('; ');

  const agent = seed.agents.find((a) => a.name === 'Route invoice rows') ?? seed.agents[0];
  const rows = Array.from({ length: 50 }, (_, i) => `INV-${i},Vendor ${i % 17},${(i * 977) % 30_000}.50`);
  const run = await startTestRun(h, seed.workspaceId, agent.id, `invoice,vendor,amount\n${rows.join('\n')}\n`);
  await waitForRun(h, run.id, (r) => ['needs_review', 'completed', 'failed'].includes(String(r.status)), 300_000);

  const pages: Record<string, string> = {
    dashboard: '/dashboard',
    agents: '/agents',
    agent: `/agents/${agent.id}`,
    'agent versions': `/agents/${agent.id}/versions`,
    'agent edit': `/agents/${agent.id}/edit`,
    runs: '/runs',
    'run details': `/runs/${run.id}`,
    approvals: '/approvals',
    reviews: '/reviews',
    sources: '/sources',
    skills: '/skills',
    integrations: '/integrations',
    chat: '/chat',
    settings: '/settings',
  };
  const figures: Record<string, { median: number; p90: number; max: number }> = {};
  console.log(`page                 median ms   p90 ms   max ms   (${rounds} rounds after one warm-up)`);
  for (const [name, path] of Object.entries(pages)) {
    const times: number[] = [];
    for (let i = 0; i <= rounds; i++) {
      const t = performance.now();
      const res = await fetch(`${web.base}${path}`, { headers: { cookie }, redirect: 'manual' });
      await res.text();
      if (res.status !== 200) throw new Error(`${path} answered ${res.status}`);
      if (i > 0) times.push(performance.now() - t);
    }
    times.sort((a, b) => a - b);
    figures[name] = {
      median: Math.round(percentile(times, 50)),
      p90: Math.round(percentile(times, 90)),
      max: Math.round(times[times.length - 1]),
    };
    const f = figures[name];
    console.log(
      `${name.padEnd(20)} ${String(f.median).padStart(9)} ${String(f.p90).padStart(8)} ${String(f.max).padStart(8)}`,
    );
  }
  web.server.closeAllConnections();
  await new Promise((r) => web.server.close(r));
  await h.close();
  await mochaGlobalTeardown();
  console.log(JSON.stringify({ bench: 'console-pages', rounds, pages: figures }));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
