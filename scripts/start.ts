// `npm start`: the whole stack on its embedded defaults — Temporal dev server, embedded Postgres, worker and
// web — as supervised children. Ctrl-C or SIGTERM stops them in reverse order; nothing is left running.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { loadConfig } from '../cadre.config';
import { loadTemporalConfig } from '../temporal.config';
import { seedDemoWorkspace } from '../db/seeds';
import { connectDatabase, connectTemporal } from './connections';
import { main, StartupError } from './fail-fast';
import { Supervised, tcpOpen, waitFor } from './supervisor';
import { ensureTemporalCli } from './temporal-cli';

const root = path.resolve(__dirname, '..');

async function assertPortFree(port: number, variable: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', () =>
      reject(new StartupError(`port ${port} is already in use: stop what uses it or set ${variable} to a free port`)),
    );
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve()));
  });
}

function assertWritable(dir: string): void {
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.accessSync(dir, fs.constants.W_OK);
  } catch {
    throw new StartupError(
      `cannot write to the data directory ${dir}: fix its permissions or set CADRE_DATA_DIR to a writable folder`,
    );
  }
}

main('cadre', async () => {
  const config = loadConfig();
  const tc = loadTemporalConfig();
  assertWritable(config.dataDir);
  await assertPortFree(config.web.port, 'CADRE_WEB_PORT');
  if (config.db.embedded) await assertPortFree(config.db.embeddedPort, 'CADRE_DB_PORT');
  if (tc.embedded) {
    await assertPortFree(tc.embeddedPort, 'CADRE_TEMPORAL_PORT');
    await assertPortFree(tc.embeddedUiPort, 'CADRE_TEMPORAL_UI_PORT');
  }

  const children: Supervised[] = [];
  let shuttingDown = false;
  const shutdown = async (code: number) => {
    if (shuttingDown) return;
    shuttingDown = true;
    console.log('stopping Cadre…');
    for (const c of [...children].reverse()) await c.stop();
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  const spawnChild = (name: string, command: string, args: string[]) => {
    const child = new Supervised(name, command, args, {
      cwd: root,
      env: process.env,
      onUnexpectedExit: (n, code) => {
        console.error(`${n} exited unexpectedly (code ${code}); stopping the rest`);
        void shutdown(1);
      },
    });
    children.push(child);
    return child;
  };
  const tsx = (script: string): [string, string[]] => [process.execPath, ['--import', 'tsx', script]];

  try {
    if (tc.embedded) {
      const temporalBin = ensureTemporalCli();
      const searchAttributes = Object.entries(tc.searchAttributes).flatMap(([k, t]) => [
        '--search-attribute',
        `${k}=${t}`,
      ]);
      spawnChild('temporal', temporalBin, [
        'server',
        'start-dev',
        '--db-filename',
        path.join(config.dataDir, 'temporal.db'),
        '--ip',
        '127.0.0.1',
        '--port',
        String(tc.embeddedPort),
        '--ui-port',
        String(tc.embeddedUiPort),
        '--namespace',
        tc.namespace,
        '--log-level',
        'warn',
        ...searchAttributes,
      ]);
      await waitFor('Temporal', async () => (await connectTemporal(tc)).connection.close(), 60_000);
    } else {
      await (await connectTemporal(tc)).connection.close();
    }
    if (config.db.embedded) {
      spawnChild('db', ...tsx('scripts/db.ts'));
      await waitFor('the embedded Postgres', () => tcpOpen(config.db.embeddedPort), 60_000);
    }

    const { knex } = await connectDatabase(config, { migrate: true });
    const seed = await seedDemoWorkspace(knex);
    await knex.destroy();

    spawnChild('worker', ...tsx('scripts/worker.ts'));
    spawnChild('web', ...tsx('scripts/web.ts'));
    await waitFor(
      'the web process',
      async () => {
        const res = await fetch(`http://127.0.0.1:${config.web.port}/readyz`);
        if (!res.ok) throw new Error(`readyz answered ${res.status}`);
      },
      120_000,
    );

    printBanner(config.web.publicUrl, tc.embedded ? tc.uiUrl : undefined, seed);
  } catch (err) {
    await shutdown(1).catch(() => undefined);
    throw err;
  }
});

function printBanner(url: string, temporalUi: string | undefined, seed: Awaited<ReturnType<typeof seedDemoWorkspace>>) {
  const lines = ['', `  Cadre is running.`, `  Console:      ${url}`];
  if (temporalUi) lines.push(`  Temporal UI:  ${temporalUi}`);
  if (seed) {
    const agent = seed.agents.find((a) => a.name === 'Route invoice rows') ?? seed.agents[0];
    lines.push(
      '',
      `  First start: a demo workspace (${seed.workspaceId}) with ${seed.agents.length} example agents.`,
      `  Its API key (shown once, keep it):`,
      `    ${seed.apiKey}`,
      '',
      `  Start a run of "${agent.name}":`,
      `    curl -sS -X POST ${url}/v1/agents/${agent.id}/run \\`,
      `      -H "Authorization: Bearer ${seed.apiKey}" -H "Content-Type: application/json" \\`,
      `      -d '{"input": "invoice,vendor,amount\\nINV-1,Acme,120.50\\nINV-2,Globex,18250\\nINV-3,Initech,990"}'`,
    );
  } else {
    lines.push('', '  API keys: npx cadre apikey create --workspace <id> --scopes run,read');
  }
  lines.push('', '  Stop with Ctrl-C.', '');
  console.log(lines.join('\n'));
}
