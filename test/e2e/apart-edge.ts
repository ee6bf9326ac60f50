/**
 * The edge of the roles-apart deployment, run inside the edge's namespace: the embedded edge
 * (envoy/edge/) with the values of the chart's Envoy config, in front of the renderer pods as
 * Envoy reaches them through the headless Service: each pod by its own address, taken in turn,
 * a busy or refusing pod's request retried once on the other. Readiness (admin `/healthz/ready`,
 * checked every half second) decides when the edge is ready.
 *
 * Its admin port serves the edge's metrics and probes as `tintype start`'s does (ready while the
 * edge accepts and a pod is ready); spans go where OTEL_EXPORTER_OTLP_ENDPOINT says.
 *
 * Env: POLICY_URL, RENDERERS (comma-separated `host:port:adminPort`), PORT, TINTYPE_ADMIN_PORT,
 * TINTYPE_RENDER_TIMEOUT_MS, OTEL_EXPORTER_OTLP_ENDPOINT (optional).
 * Prints `edge.ready` once it listens and a pod is ready.
 */
import http from 'node:http';
import { createAdminServer, READY_PATH } from '../../lib/admin.ts';
import { createEdge } from '../../envoy/edge/edge.ts';
import { loadConfig } from '../../lib/config.ts';
import { createLogger } from '../../lib/log.ts';
import { Registry } from '../../lib/metrics.ts';
import { startTelemetry } from '../../lib/telemetry.ts';
import { openapiJson } from '../../renderer/openapi/document.ts';

interface Pod {
  host: string;
  port: number;
  adminPort: number;
  ready: boolean;
}

const env = (name: string): string => {
  const v = process.env[name];
  if (v === undefined || v === '') throw new Error(`${name} is required`);
  return v;
};

const pods: Pod[] = env('RENDERERS').split(',').map((s) => {
  const [host, port, adminPort] = s.split(':');
  return { host: host!, port: Number(port), adminPort: Number(adminPort), ready: false };
});

function probe(p: Pod): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host: p.host, port: p.adminPort, path: READY_PATH, timeout: 1000, agent: false }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.once('timeout', () => req.destroy());
    req.once('error', () => resolve(false));
  });
}

async function main(): Promise<void> {
  const telemetry = await startTelemetry(loadConfig(), 'edge');
  const registry = new Registry();
  const edge = createEdge({
    policyUrl: env('POLICY_URL'),
    rendererUrls: pods.map((p) => `http://${p.host}:${p.port}`),
    host: '0.0.0.0',
    port: Number(env('PORT')),
    openapi: openapiJson(),
    renderTimeoutMs: Number(env('TINTYPE_RENDER_TIMEOUT_MS')),
    logger: createLogger('edge'),
    metrics: registry,
  });
  const admin = createAdminServer({
    host: '0.0.0.0',
    port: Number(env('TINTYPE_ADMIN_PORT')),
    registries: [registry],
    ready: () => edge.healthy() && pods.some((p) => p.ready),
  });
  await admin.start();
  await edge.start();
  let announced = false;
  const check = async (): Promise<void> => {
    await Promise.all(pods.map(async (p) => {
      p.ready = await probe(p);
    }));
    if (!announced && pods.some((p) => p.ready)) {
      announced = true;
      process.stdout.write('edge.ready\n');
    }
  };
  await check();
  const timer = setInterval(() => void check(), 500);
  const stop = async (): Promise<void> => {
    clearInterval(timer);
    await edge.stop();
    await admin.stop();
    await telemetry.shutdown().catch(() => {});
    process.exit(0);
  };
  process.once('SIGTERM', () => void stop());
  process.once('SIGINT', () => void stop());
}

main().catch((err: unknown) => {
  process.stderr.write(`apart edge failed: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
