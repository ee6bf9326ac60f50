/**
 * `tintype policy` exports its spans (docs/operations.md "Telemetry"): with OTEL_EXPORTER_OTLP_ENDPOINT pointing at
 * a loopback receiver, the `authz` span of a check arrives under service `tintype-policy`, in the
 * trace the caller's `traceparent` named, and SIGTERM flushes what is still batched. No key in
 * anything exported.
 */
import t from 'tap';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startOtlpReceiver } from '../e2e/otlp-receiver.ts';
import { request } from './http.ts';
import { runTintype, startPolicyProcess } from './process.ts';
import { EXT_AUTHZ_PREFIX, LEASE_HEADER, SETTLE_PATH } from '../../lib/policy-contract.ts';
import { TEST_RENDERER_AUTH } from '../lib/leases.ts';

t.test('tintype policy exports authz and settle spans to the configured endpoint', async (t) => {
  const receiver = await startOtlpReceiver();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-policy-otel-'));
  t.teardown(async () => {
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const env = { TINTYPE_DATA_DIR: dir, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint };
  const created = await runTintype(['keys', 'create', '--plan', 'free'], env);
  const secret = /^secret: (\S+)$/m.exec(created.stdout)?.[1];
  t.equal(created.code, 0, 'a key is made');
  if (secret === undefined) throw new Error(`keys create printed no secret: ${created.stderr}`);

  const proc = await startPolicyProcess(env);
  t.teardown(() => proc.kill('SIGKILL'));
  const traceId = '0af7651916cd43dd8448eb211c80319c';
  const parent = 'b7ad6b7169203331';
  const check = await request(proc.port, 'GET', `${EXT_AUTHZ_PREFIX}/v1/ping`, { authorization: `Bearer ${secret}`, traceparent: `00-${traceId}-${parent}-01` });
  t.equal(check.status, 200, 'granted', { output: proc.output() });
  const settle = await request(proc.settlePort, 'POST', SETTLE_PATH, { ...TEST_RENDERER_AUTH, traceparent: `00-${traceId}-${parent}-01` },
    JSON.stringify({ lease: check.headers[LEASE_HEADER], status: 200 }));
  t.equal(settle.status, 204, 'settled');
  // Stopped at once: spans still batched must be flushed by the shutdown, not lost with the process.
  await proc.kill('SIGTERM');
  t.match(proc.output(), /"event":"stopped"/, 'stopped cleanly on SIGTERM');

  const authz = await receiver.waitFor((s) => s.name === 'authz' && s.traceId === traceId);
  t.ok(authz, 'the authz span arrived');
  t.match(authz, { service: 'tintype-policy', parentSpanId: parent, attributes: { 'tintype.operation': 'ping', 'tintype.outcome': 'granted' } },
    'under tintype-policy, a child of the caller\'s span');
  const settled = await receiver.waitFor((s) => s.name === 'settle' && s.traceId === traceId);
  t.match(settled, { service: 'tintype-policy', parentSpanId: parent, attributes: { 'tintype.settle': 'settled' } }, 'the settle span arrived');
  t.notOk(receiver.raw.some((body) => body.includes(secret.slice(3))), 'no key in anything exported');
});

t.test('without an endpoint, tintype policy says tracing is off', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-policy-otel-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const proc = await startPolicyProcess({ TINTYPE_DATA_DIR: dir });
  t.teardown(() => proc.kill('SIGKILL'));
  const listening = proc.output().split('\n').map((l) => { try { return JSON.parse(l); } catch { return undefined; } })
    .find((e) => e?.event === 'listening');
  t.match(listening, { tracing: false }, 'tracing off');
  await proc.kill('SIGTERM');
});
