/**
 * `tintype renderer` as a process (docs/architecture.md §1): it starts its own guard, passes its
 * self-test, renders, settles to TINTYPE_POLICY_URL, and on SIGTERM finishes the render in
 * flight inside the budget, settles it, closes Chromium and exits 0.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { LEASE_HEADER, SETTLE_PATH, type SettleRequest } from '../../../lib/policy-contract.ts';
import { TEST_LEASE_ENV, signedLease } from '../../lib/leases.ts';
import { SITE_HOST, pngSize, startSite, until } from './harness.ts';
import { alive, descendants } from './procs.ts';

const root = fileURLToPath(new URL('../../../', import.meta.url));

t.test('SIGTERM finishes the render in flight, settles it, closes Chromium and exits 0', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tintype-renderer-cmd-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));

  const settles: SettleRequest[] = [];
  const policy = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === SETTLE_PATH) settles.push(JSON.parse(Buffer.concat(chunks).toString('utf8')));
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => policy.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise<void>((r) => policy.close(() => r())));

  const site = await startSite((_req, res) => {
    // Slow enough that SIGTERM lands while the render waits for it.
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<!doctype html><p>slow</p>');
    }, 1500);
  });
  t.teardown(() => site.close());

  // Only what the child needs: tap's process tracking would otherwise add its loaders.
  const env: Record<string, string> = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root' };
  Object.assign(env, {
    PORT: '0',
    TINTYPE_ADMIN_PORT: '0',
    TINTYPE_DATA_DIR: dir,
    ...TEST_LEASE_ENV,
    TINTYPE_POLICY_URL: `http://127.0.0.1:${(policy.address() as AddressInfo).port}`,
    GUARD_ALLOW_CIDRS: `${SITE_HOST}/32`,
    TINTYPE_RENDER_TIMEOUT_MS: '20000',
  });
  // Through env(1), which execs: the pid is tintype's own and NODE_OPTIONS is dropped.
  const child = spawn('/usr/bin/env', ['-u', 'NODE_OPTIONS', path.join(root, 'bin/tintype'), 'renderer'], { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  t.teardown(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  const lines: Record<string, unknown>[] = [];
  let buffered = '';
  child.stderr.on('data', (c: Buffer) => {
    buffered += c.toString('utf8');
    const parts = buffered.split('\n');
    buffered = parts.pop()!;
    for (const p of parts) {
      try {
        lines.push(JSON.parse(p));
      } catch {
        lines.push({ text: p });
      }
    }
  });

  await until(() => lines.some((l) => l.event === 'renderer.listening') || child.exitCode !== null, 'the renderer to listen', 60_000);
  t.ok(lines.some((l) => l.event === 'renderer.listening'), 'listening', { lines: lines.slice(0, 20) });
  const listening = lines.find((l) => l.event === 'renderer.listening')!;
  const base = `http://127.0.0.1:${listening.port}`;
  const admin = `http://127.0.0.1:${listening.admin_port}`;
  let ready = 0;
  for (let i = 0; i < 600 && ready !== 200; i++) {
    ready = (await fetch(`${admin}/healthz/ready`)).status;
    if (ready !== 200) await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(ready, 200, 'ready once its own guard passed the self-test');

  const lease = signedLease('screenshot');
  const rendering = fetch(`${base}/v1/screenshot`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', [LEASE_HEADER]: lease },
    body: JSON.stringify({ url: `${site.origin}/slow`, width: 64, height: 48 }),
  });
  await until(() => (site.hits.get('/slow') ?? 0) > 0, 'the render to reach the site');
  const tree = descendants(child.pid!);
  t.ok(tree.length > 0, `Chromium and its relay run under the renderer (${tree.length} processes)`);
  child.kill('SIGTERM');
  const res = await rendering;
  t.equal(res.status, 200, 'the render in flight finished');
  t.same(pngSize(Buffer.from(await res.arrayBuffer())), { width: 64, height: 48 });
  t.equal(await exited, 0, 'exit code 0');
  t.same(settles, [{ lease, status: 200, cache: 'miss' }], 'settled to TINTYPE_POLICY_URL before exiting');
  t.ok(lines.some((l) => l.event === 'renderer.stopped'), 'logged its stop');
  t.same(tree.filter(alive), [], 'no Chromium process is left running');
  await t.rejects(fetch(`${base}/v1/ping`), 'no longer listening');
});

t.test('pod isolation as PID 1 (a container with no init): the renderer says an init must reap orphans', async (t) => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tintype-renderer-pid1-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root',
    PORT: '0', TINTYPE_ADMIN_PORT: '0', TINTYPE_DATA_DIR: dir, TINTYPE_ISOLATION: 'pod', ...TEST_LEASE_ENV,
  };
  // A PID namespace of its own makes the renderer PID 1, as in a container started without an
  // init; the whole namespace goes when unshare's child is killed.
  const child = spawn('unshare', ['--pid', '--fork', '--kill-child', '/usr/bin/env', '-u', 'NODE_OPTIONS', path.join(root, 'bin/tintype'), 'renderer'],
    { cwd: root, env, stdio: ['ignore', 'ignore', 'pipe'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  t.teardown(async () => {
    child.kill('SIGKILL');
    await exited;
  });
  let log = '';
  child.stderr!.on('data', (c: Buffer) => (log += c.toString('utf8')));
  // The listener may open first; the isolation starts before the browser (renderer/browser/pool.ts).
  await until(() => /"event":"browser\.started"/.test(log), 'the browser to start', 60_000);
  const warning = log.split('\n').filter((l) => l.includes('"event":"browser.no_init"'));
  t.equal(warning.length, 1, 'one warning, at start');
  t.match(warning[0], /"level":"warn"/);
  t.match(warning[0], /tini/, 'it names a way out');
});
