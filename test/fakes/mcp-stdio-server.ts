// An MCP server spoken to over stdio, as an operator-declared server (CADRE_MCP_STDIO_SERVERS) of a connection of
// transport "stdio" starts it: `node --import tsx` this file. `whoami` says what the process was started with (its
// environment's names, user, working directory, process id). Given `--fail-with <text>` it writes the text to stderr
// and exits before speaking, as a server that cannot start does.
import fs from 'node:fs';
import { z } from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';

const failWith = process.argv.indexOf('--fail-with');
if (failWith !== -1) {
  process.stderr.write(`starting the calculator...\n${process.argv[failWith + 1]}\n`);
  process.exit(3);
}

const server = new McpServer({ name: 'calculator', version: '1.0.0' });
server.registerTool(
  'add',
  {
    description: 'Add two numbers.',
    inputSchema: { a: z.number(), b: z.number() },
    annotations: { readOnlyHint: true },
  },
  async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }),
);
server.registerTool(
  'whoami',
  { description: 'What this process was started with.', annotations: { readOnlyHint: true } },
  async () => {
    let wrote = false;
    try {
      fs.writeFileSync('scratch.txt', 'mine'); // in its working directory
      wrote = fs.readFileSync('scratch.txt', 'utf8') === 'mine';
    } catch {
      // not writable
    }
    const me = {
      env: Object.keys(process.env).sort(),
      home: process.env.HOME,
      tmpdir: process.env.TMPDIR,
      greeting: process.env.GREETING,
      uid: process.getuid!(),
      gid: process.getgid!(),
      groups: process.getgroups!(),
      cwd: process.cwd(),
      wrote,
      pid: process.pid,
    };
    return { content: [{ type: 'text', text: JSON.stringify(me) }], structuredContent: me };
  },
);
void server.connect(new StdioServerTransport());
