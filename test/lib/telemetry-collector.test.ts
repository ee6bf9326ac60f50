/**
 * lib/telemetry.ts against a collector outside the cluster (docs/operations.md "Telemetry"): an
 * https:// OTLP/HTTP receiver whose certificate a private CA signed and which wants a token
 * header. With OTEL_EXPORTER_OTLP_CERTIFICATE (the CA) and OTEL_EXPORTER_OTLP_HEADERS (the
 * token), as the chart gives them from telemetry.caSecret and telemetry.headersSecret, the spans
 * arrive with the header; bad values are refused at start with a message that never holds a value.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { trace } from '@opentelemetry/api';
import { loadConfig } from '../../lib/config.ts';
import { startTelemetry } from '../../lib/telemetry.ts';

/** A CA and a certificate it signed for localhost and 127.0.0.1, made with openssl. */
function makeCerts(dir: string): { ca: string; cert: string; key: string } {
  const f = (n: string): string => path.join(dir, n);
  const run = (args: string[]): void => void execFileSync('openssl', args, { stdio: 'ignore' });
  run(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', '/CN=test collector CA']);
  run(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=localhost']);
  writeFileSync(f('ext.cnf'), 'subjectAltName=DNS:localhost,IP:127.0.0.1\n');
  run(['x509', '-req', '-in', f('server.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('server.crt'), '-days', '2', '-extfile', f('ext.cnf')]);
  return { ca: f('ca.crt'), cert: f('server.crt'), key: f('server.key') };
}

t.test('an https collector with a private CA and a token header receives the spans', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-otlp-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const certs = makeCerts(dir);
  const seen: { path: string; token: string | undefined; body: string }[] = [];
  let arrived!: () => void;
  const first = new Promise<void>((r) => (arrived = r));
  const server = https.createServer({ cert: readFileSync(certs.cert), key: readFileSync(certs.key) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const token = req.headers['x-collector-token'] as string | undefined;
      seen.push({ path: req.url ?? '', token, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(token === 'tok en/1' ? 200 : 401, { 'content-type': 'application/json' }).end('{}');
      if (token === 'tok en/1') arrived();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => server.close(() => r())));
  const config = loadConfig({
    OTEL_EXPORTER_OTLP_ENDPOINT: `https://localhost:${(server.address() as AddressInfo).port}/otel`,
    OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-token=tok%20en%2F1,x-other=2',
    OTEL_EXPORTER_OTLP_CERTIFICATE: certs.ca,
  });
  const tel = await startTelemetry(config, 'test', { exportDelayMs: 50 });
  trace.getTracer('tintype').startSpan('through-the-private-ca').end();
  await first;
  await tel.shutdown();
  const ok = seen.find((s) => s.token === 'tok en/1')!;
  t.equal(ok.path, '/otel/v1/traces', 'the endpoint is a base');
  t.match(ok.body, 'through-the-private-ca', 'the span arrived');
});

t.test('bad headers or CA are refused with the variable named and no value shown', async (t) => {
  for (const headers of ['novalue', 'bad name=1', 'x=%E0%A4%A']) {
    t.throws(() => loadConfig({ OTEL_EXPORTER_OTLP_HEADERS: headers }), /OTEL_EXPORTER_OTLP_HEADERS/, headers);
  }
  try {
    loadConfig({ OTEL_EXPORTER_OTLP_HEADERS: 'x-token=secret%0Avalue' });
    t.fail('a control character is refused');
  } catch (err) {
    t.match((err as Error).message, /x-token holds a control character/);
    t.notMatch((err as Error).message, /secret/, 'the value is not in the message');
  }
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-otlp-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(path.join(dir, 'not-a-ca'), 'hello\n');
  const base = { otelEndpoint: 'https://localhost:1', otelServiceName: undefined, otelHeaders: {} };
  await t.rejects(startTelemetry({ ...base, otelCaFile: path.join(dir, 'missing.crt') }, 'test'), /OTEL_EXPORTER_OTLP_CERTIFICATE: cannot read .*missing\.crt: ENOENT/);
  await t.rejects(startTelemetry({ ...base, otelCaFile: path.join(dir, 'not-a-ca') }, 'test'), /holds no PEM certificate/);
});
