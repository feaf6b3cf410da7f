// Keeps docker/ honest against the config modules: a variable the code does not read is a silent no-op in
// production, and a missing DATABASE_URL or TEMPORAL_ADDRESS makes a container fall back to the embedded
// database or dev server instead of failing loudly.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { cadreEnvSchema } from '../../cadre.config';
import { searchAttributes, temporalEnvSchema } from '../../temporal.config';
import { devServerDynamicConfig } from '../../scripts/temporal-cli';

const dockerDir = path.join(__dirname, '..', '..', 'docker');

interface ComposeService {
  image?: string;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
  build?: string | { context?: string; dockerfile?: string };
  command?: string | string[];
  entrypoint?: string | string[];
  environment?: Record<string, unknown> | string[];
  cpu_shares?: number;
}

function readCompose(): { services: Record<string, ComposeService> } {
  // merge: compose honours YAML merge keys (<<: *anchor), which YAML 1.2 leaves off by default.
  return parse(fs.readFileSync(path.join(dockerDir, 'compose.yaml'), 'utf8'), { merge: true });
}

function environmentNames(environment: ComposeService['environment']): string[] {
  if (environment === undefined) return [];
  if (Array.isArray(environment)) return environment.map((entry) => entry.split('=')[0]);
  return Object.keys(environment);
}

function isBuiltFromDockerfile(service: ComposeService): boolean {
  if (service.build === undefined) return false;
  const dockerfile = typeof service.build === 'string' ? 'Dockerfile' : (service.build.dockerfile ?? 'Dockerfile');
  return path.basename(dockerfile) === 'Dockerfile';
}

describe('docker/compose.yaml', () => {
  const { services } = readCompose();
  // The OpenTelemetry SDK's own standard variables (services/telemetry/tracing.ts hands them to it).
  const otelNames = [
    'OTEL_EXPORTER_OTLP_ENDPOINT',
    'OTEL_SERVICE_NAME',
    'OTEL_TRACES_SAMPLER',
    'OTEL_TRACES_SAMPLER_ARG',
  ];
  const knownNames = new Set([
    ...Object.keys(cadreEnvSchema.shape),
    ...Object.keys(temporalEnvSchema.shape),
    ...otelNames,
  ]);
  const cadreServices = Object.entries(services).filter(([, service]) => isBuiltFromDockerfile(service));

  it('builds web and worker from docker/Dockerfile', () => {
    assert.deepEqual(cadreServices.map(([name]) => name).sort(), ['web', 'worker']);
    for (const [name, service] of cadreServices) {
      assert.ok(typeof service.build === 'object', `${name}: build must name context and dockerfile`);
      assert.equal(service.build.context, '..', `${name}: build context`);
      assert.equal(service.build.dockerfile, 'docker/Dockerfile', `${name}: dockerfile`);
    }
  });

  it('gives the API and its database CPU priority over background work, as `npm start` does', () => {
    const shares = (name: string) => services[name].cpu_shares ?? 1024; // Docker's default
    for (const background of ['worker', 'temporal'])
      for (const api of ['web', 'cadre-db'])
        assert.ok(shares(background) < shares(api), `${background} must yield the CPU to ${api}`);
  });

  it('gives web and worker only environment variables the config modules read', () => {
    for (const [name, service] of cadreServices) {
      const unknown = environmentNames(service.environment).filter((variable) => !knownNames.has(variable));
      assert.deepEqual(unknown, [], `${name} sets variables that neither cadre.config.ts nor temporal.config.ts reads`);
    }
  });

  it("sends traces to the observability profile's Jaeger only when asked: off by default, each process named", () => {
    const text = fs.readFileSync(path.join(dockerDir, 'compose.yaml'), 'utf8');
    const env = (name: string) => services[name].environment as Record<string, string>;
    for (const [name, service] of [
      ['web', 'cadre-web'],
      ['worker', 'cadre-worker'],
    ]) {
      // Passed through from the operator's .env or shell, empty (tracing off) without it.
      assert.equal(env(name).OTEL_EXPORTER_OTLP_ENDPOINT, '${OTEL_EXPORTER_OTLP_ENDPOINT:-}');
      assert.equal(env(name).CADRE_TRACE_URL, '${CADRE_TRACE_URL:-}');
      assert.equal(env(name).OTEL_SERVICE_NAME, service);
      assert.equal(cadreEnvSchema.parse({ CADRE_TRACE_URL: '' }).CADRE_TRACE_URL, undefined, 'empty is unset');
    }
    // What the comment tells the operator to set names the jaeger service's OTLP port and its published UI.
    const endpoint = /#\s+OTEL_EXPORTER_OTLP_ENDPOINT=(\S+)/.exec(text)?.[1];
    const traceUrl = /#\s+CADRE_TRACE_URL=(\S+)/.exec(text)?.[1];
    assert.equal(endpoint, 'http://jaeger:4318');
    const jaeger = services.jaeger as ComposeService & { profiles?: string[]; expose?: string[]; ports?: string[] };
    assert.deepEqual(jaeger.profiles, ['observability']);
    assert.ok(jaeger.expose?.includes(new URL(endpoint).port), 'jaeger takes OTLP/HTTP on 4318');
    assert.ok(traceUrl, 'the comment shows CADRE_TRACE_URL');
    assert.equal(cadreEnvSchema.parse({ CADRE_TRACE_URL: traceUrl }).CADRE_TRACE_URL, traceUrl);
    assert.ok(jaeger.ports?.includes(`${new URL(traceUrl).port}:16686`), "the trace link opens Jaeger's published UI");
  });

  it('has Prometheus scrape the metrics ports compose gives web, worker and the Temporal SDK, by service name', () => {
    const env = (name: string) => services[name].environment as Record<string, string>;
    const scrape = parse(fs.readFileSync(path.join(dockerDir, 'prometheus.yml'), 'utf8')) as {
      scrape_configs: { job_name: string; dns_sd_configs: { names: string[]; port: number }[] }[];
    };
    const job = (name: string) => scrape.scrape_configs.find((j) => j.job_name === name)!.dns_sd_configs[0];
    const expected = [
      ['cadre-web', 'web', env('web').CADRE_METRICS_PORT],
      ['cadre-worker', 'worker', env('worker').CADRE_WORKER_METRICS_PORT],
      ['temporal-worker', 'worker', env('worker').CADRE_TEMPORAL_METRICS_PORT],
    ];
    for (const [name, service, port] of expected) {
      assert.ok(port, `${service} sets the port ${name} scrapes`);
      assert.deepEqual(job(name), { names: [service], type: 'A', port: Number(port) }, name);
      assert.ok(services[service], `${service} is a compose service (its DNS name)`);
    }
    // Reachable from the prometheus container, not published to the host.
    for (const service of ['web', 'worker']) {
      assert.equal(env(service).CADRE_METRICS_HOST, '0.0.0.0');
      const published = ((services[service] as { ports?: string[] }).ports ?? []).join(' ');
      assert.doesNotMatch(published, /946[45]/);
    }
    const prometheus = services.prometheus as ComposeService & { profiles?: string[] };
    assert.deepEqual(prometheus.profiles, ['observability']);
    assert.ok(prometheus.volumes?.includes('./prometheus.yml:/etc/prometheus/prometheus.yml:ro'));
    const datasource = parse(
      fs.readFileSync(path.join(dockerDir, 'grafana/provisioning/datasources/prometheus.yaml'), 'utf8'),
    ) as { datasources: { url: string }[] };
    assert.equal(datasource.datasources[0].url, 'http://prometheus:9090', "Grafana reads the profile's Prometheus");
  });

  it('points web and worker at the compose Postgres and Temporal, never the embedded defaults', () => {
    for (const [name, service] of cadreServices) {
      const names = environmentNames(service.environment);
      for (const required of ['DATABASE_URL', 'TEMPORAL_ADDRESS']) {
        assert.ok(names.includes(required), `${name} must set ${required}`);
      }
    }
  });

  it('runs the compiled worker process with plain node in the worker service', () => {
    assert.deepEqual([services.worker.command].flat(), ['node', 'dist/scripts/worker.js']);
  });

  it('serves Cadre from a Postgres image with the vector extension', () => {
    assert.match(services['cadre-db']?.image ?? '', /^pgvector\/pgvector:/);
  });

  it("creates Temporal's schemas with the script the cluster tests run, before the server starts", () => {
    const job = services['temporal-schema'];
    assert.ok(job, 'a temporal-schema job');
    assert.ok(
      job.volumes?.some((v) => v.startsWith('./temporal-schema.sh:')),
      'it mounts docker/temporal-schema.sh',
    );
    assert.match([job.entrypoint].flat().join(' '), /temporal-schema\.sh/);
    assert.equal(services.temporal.depends_on?.['temporal-schema']?.condition, 'service_completed_successfully');
    assert.equal((services.temporal.environment as Record<string, string>).SKIP_SCHEMA_SETUP, 'true');
    const stack = fs.readFileSync(path.join(dockerDir, '../test/cluster/stack.ts'), 'utf8');
    assert.match(stack, /docker\/temporal-schema\.sh/, 'test/cluster/stack.ts runs the same script');
  });

  it("gives the Temporal server the embedded dev server's dynamic config, from the file the cluster tests use", () => {
    const env = services.temporal.environment as Record<string, string>;
    const mount = services.temporal.volumes?.find((v) => v.startsWith('./temporal-dynamicconfig.yaml:'));
    assert.ok(mount, 'the temporal service mounts docker/temporal-dynamicconfig.yaml');
    assert.equal(mount.split(':')[1], `/etc/temporal/${env.DYNAMIC_CONFIG_FILE_PATH}`);
    const file = parse(fs.readFileSync(path.join(dockerDir, 'temporal-dynamicconfig.yaml'), 'utf8')) as Record<
      string,
      { value: unknown }[]
    >;
    const fromFile = Object.entries(file).map(([key, [{ value }]]) => `${key}=${String(value)}`);
    const devServer = devServerDynamicConfig.filter((_, i) => i % 2 === 1);
    assert.deepEqual(fromFile.sort(), devServer.sort());
    const stack = fs.readFileSync(path.join(dockerDir, '../test/cluster/stack.ts'), 'utf8');
    assert.match(stack, /docker\/temporal-dynamicconfig\.yaml/, 'test/cluster/stack.ts starts the server with it');
  });

  it('registers every Cadre search attribute as a Keyword', () => {
    const setup = [services['temporal-admin-tools']?.command].flat().join('\n');
    for (const [attribute, type] of Object.entries(searchAttributes)) {
      assert.equal(type, 'Keyword', `${attribute} is ${type}: temporal-admin-tools creates Keyword attributes only`);
      assert.ok(setup.includes(attribute), `temporal-admin-tools does not create ${attribute}`);
    }
    assert.match(setup, /--type Keyword/);
  });
});

describe('docker/Dockerfile', () => {
  const dockerfilePath = path.join(dockerDir, 'Dockerfile');

  it('exists', () => {
    assert.ok(fs.existsSync(dockerfilePath), `${dockerfilePath} is missing`);
  });

  it('builds on Node 24 and runs the web process by default', () => {
    const lines = fs.readFileSync(dockerfilePath, 'utf8').split('\n');
    assert.ok(
      lines.some((line) => /^FROM node:24\b/.test(line)),
      'no FROM node:24 line',
    );
    const cmd = lines.filter((line) => /^CMD\b/.test(line)).at(-1);
    assert.ok(cmd, 'no CMD line');
    assert.equal(cmd, 'CMD ["node", "dist/scripts/web.js"]', 'the compiled web process, with no TypeScript loader');
  });

  it('compiles the server code in its build stage and ships dist/ to the image', () => {
    const text = fs.readFileSync(dockerfilePath, 'utf8');
    assert.match(text, /^RUN .*npm run build\b/m);
    assert.match(text, /^COPY --from=build \/app\/dist \.\/dist$/m);
    assert.doesNotMatch(text, /tsx/, 'no TypeScript loader in the image');
  });
});
