// Imported first by scripts/web.ts and scripts/worker.ts, before anything loads http, express or pg: the
// instrumentations patch those modules as they are first required. The process is named after its script
// (cadre-web, cadre-worker) unless OTEL_SERVICE_NAME says otherwise.
import path from 'node:path';
import { startTracing } from './tracing';

startTracing(`cadre-${path.basename(process.argv[1] ?? 'process', path.extname(process.argv[1] ?? ''))}`);
