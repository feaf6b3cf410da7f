// localstripe (PyPI), a stateful Stripe-compatible server, on a free port for one suite. It saves its whole state to
// the fixed file /tmp/localstripe.pickle after every write and reads it back at start, which suites (or people)
// running at once would share; the launcher turns that file off, and nothing else about the server.
import { startPyServer, type PyServer } from './pyserver';

const withoutStateFile = [
  'import sys',
  'import localstripe.resources as resources',
  'resources.Store.dump_to_disk = lambda self: None',
  'resources.Store.try_load_from_disk = lambda self: None',
  'from localstripe.server import start',
  "sys.argv = ['localstripe', '--port', sys.argv[1], '--from-scratch']",
  'start()',
].join('\n');

export function startLocalstripe(): Promise<PyServer> {
  return startPyServer('localstripe', (port) => ['-c', withoutStateFile, String(port)], { command: 'python' });
}
