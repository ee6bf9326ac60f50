/**
 * `helm test` (docs/helm.md, "Install"): the test Pod's own script, run as the rendered Pod runs it
 * (its command, args and env; the Secret's key resolved as the kubelet would), against a stand-in
 * for the edge's two Services on loopback (Envoy and the roles behind it run in
 * test/chart/wiring.test.ts): the OpenAPI document, readiness and, with tests.apiKeySecret, an
 * html-to-image render with that key whose answer must be a PNG.
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { CHART, ofKind, render } from '../helm.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

const KEY = 'sk_helmtest_0123456789abcdef';
const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');

interface Edge { edge: string; admin: string; renders: { authorization?: string; body: any }[]; close(): Promise<void> }

/** The edge's public Service (TLS, a throw-away certificate) and its admin Service, on loopback. */
async function standInEdge(answer: 'png' | 'html'): Promise<Edge> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-helm-test-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', path.join(dir, 'k'), '-out', path.join(dir, 'c'), '-days', '1', '-subj', '/CN=tt-envoy'], { stdio: 'ignore' });
  const renders: Edge['renders'] = [];
  const pub = https.createServer({ key: readFileSync(path.join(dir, 'k')), cert: readFileSync(path.join(dir, 'c')) }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'GET' && req.url === '/openapi.json') return void res.end(readFileSync(path.join(CHART, 'files/openapi.json')));
      if (req.method === 'POST' && req.url === '/v1/html-to-image') {
        renders.push({ authorization: req.headers.authorization, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        if (req.headers.authorization !== `Bearer ${KEY}`) return void res.writeHead(401).end('{"error":"unauthorized"}');
        return void (answer === 'png' ? res.writeHead(200, { 'content-type': 'image/png', 'x-cache': 'miss' }).end(PNG) : res.writeHead(200, { 'content-type': 'text/html' }).end('<p>'));
      }
      res.writeHead(404).end();
    });
  });
  const admin = http.createServer((req, res) => void (req.url === '/healthz/ready' ? res.end('ok') : res.writeHead(404).end()));
  await new Promise<void>((r) => pub.listen(0, '127.0.0.1', r));
  await new Promise<void>((r) => admin.listen(0, '127.0.0.1', r));
  return {
    edge: `https://127.0.0.1:${(pub.address() as AddressInfo).port}`,
    admin: `http://127.0.0.1:${(admin.address() as AddressInfo).port}`,
    renders,
    close: async () => {
      await new Promise((r) => pub.close(r));
      await new Promise((r) => admin.close(r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The rendered test Pod's container, run here: its env, with the Services' URLs pointed at the stand-in and the Secret's key given. */
async function runTestPod(set: string[], edge: Edge, key: string): Promise<{ code: number; out: string; env: Record<string, any> }> {
  const [pod] = ofKind(await render('default-values.yaml', set), 'Pod') as any[];
  const c = pod.spec.containers[0];
  const env: Record<string, any> = Object.fromEntries(c.env.map((e: any) => [e.name, e]));
  const values: Record<string, string> = { PATH: process.env['PATH'] ?? '' };
  for (const [name, e] of Object.entries(env)) values[name] = e.valueFrom?.secretKeyRef ? key : e.value;
  values['TINTYPE_TEST_EDGE'] = edge.edge;
  values['TINTYPE_TEST_ADMIN'] = edge.admin;
  t.equal(c.command[0], 'node');
  return new Promise((resolve) => {
    execFile(process.execPath, c.args, { env: values }, (err, stdout, stderr) => {
      resolve({ code: err === null ? 0 : (typeof err.code === 'number' ? err.code : 1), out: stdout + stderr, env });
    });
  });
}

t.test('with tests.apiKeySecret: a keyed html-to-image render through the edge must answer a PNG', async (t) => {
  const edge = await standInEdge('png');
  t.teardown(() => edge.close());
  const set = ['--set', 'tests.apiKeySecret.name=helm-test-key'];
  const ok = await runTestPod(set, edge, KEY);
  t.equal(ok.code, 0, ok.out);
  t.same(ok.env['TINTYPE_TEST_KEY'].valueFrom, { secretKeyRef: { name: 'helm-test-key', key: 'key' } }, 'the key from the Secret');
  t.equal(ok.env['TINTYPE_TEST_EDGE'].value, 'https://tt-envoy:443', "the edge's Service");
  t.equal(edge.renders.length, 1, 'one render');
  t.equal(edge.renders[0]!.authorization, `Bearer ${KEY}`);
  t.match(edge.renders[0]!.body, { html: /helm test \d+/, width: 320, height: 120 });
  t.match(ok.out, /a keyed html-to-image render answered 200, a \d+-byte PNG/);
  const refused = await runTestPod(set, edge, 'sk_wrong_0123456789abcdef');
  t.not(refused.code, 0, 'a key the edge refuses fails the test');
  t.match(refused.out, /html-to-image: 401/);
});

t.test('an answer that is not a PNG fails the test', async (t) => {
  const edge = await standInEdge('html');
  t.teardown(() => edge.close());
  const r = await runTestPod(['--set', 'tests.apiKeySecret.name=helm-test-key'], edge, KEY);
  t.not(r.code, 0);
  t.match(r.out, /not a PNG/);
});

t.test('without it: the routes alone, and the test says how to add the render', async (t) => {
  const edge = await standInEdge('png');
  t.teardown(() => edge.close());
  const r = await runTestPod([], edge, KEY);
  t.equal(r.code, 0, r.out);
  t.equal(edge.renders.length, 0);
  t.match(r.out, /no render: set tests\.apiKeySecret/);
});
