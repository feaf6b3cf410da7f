// The parts of the MCP SDK (@modelcontextprotocol/sdk) Cadre uses at run time, loaded on first use: a service with no
// MCP connection does not hold them (with their zod schemas of every message, about 22 MB in each of the web and the worker).
// One loader for all of them, so that an `instanceof` compares with the very classes that made the error.
let loading: ReturnType<typeof load> | undefined;

async function load() {
  const [{ Client }, { StreamableHTTPClientTransport, StreamableHTTPError }, { ErrorCode, McpError }, stdio] =
    await Promise.all([
      import('@modelcontextprotocol/sdk/client/index.js'),
      import('@modelcontextprotocol/sdk/client/streamableHttp.js'),
      import('@modelcontextprotocol/sdk/types.js'),
      import('@modelcontextprotocol/sdk/shared/stdio.js'),
    ]);
  const { ReadBuffer, serializeMessage } = stdio;
  return {
    Client,
    StreamableHTTPClientTransport,
    StreamableHTTPError,
    ErrorCode,
    McpError,
    ReadBuffer,
    serializeMessage,
  };
}

export type McpSdk = Awaited<ReturnType<typeof load>>;

export const mcpSdk = (): Promise<McpSdk> => (loading ??= load());
