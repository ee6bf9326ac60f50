// The checks of run-roles.sh, run on the node inside its network namespace (Node's own modules only).
//   drive.mjs roles WORK KEY   policy, guard, renderer + browser: ready, then one page rendered through the guard
//   drive.mjs start WORK       tintype start (tintype-all): ready, a key made beside it, the same page
// Prints each role's time from its container's start to /healthz/ready, and its process tree's CPU time and RSS at that moment.
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

const [mode, work, key] = process.argv.slice(2);
const t0 = performance.now();
const PAGE = { url: 'http://127.0.0.2:8000/', width: 320, height: 200 };
const TICKS = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }));
const PAGE_SIZE = 4096;

/** The process tree under `pid`: CPU seconds (user + system) and RSS in MB, summed. */
function tree(pid) {
  const procs = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      procs.push({ pid: Number(d), ppid: Number(f[1]), cpu: (Number(f[11]) + Number(f[12])) / TICKS, rss: Number(f[21]) * PAGE_SIZE });
    } catch { /* gone */ }
  }
  const inTree = new Set([pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of procs) if (!inTree.has(p.pid) && inTree.has(p.ppid)) { inTree.add(p.pid); grew = true; }
  }
  const mine = procs.filter((p) => inTree.has(p.pid));
  return { cpuS: +mine.reduce((s, p) => s + p.cpu, 0).toFixed(2), rssMB: Math.round(mine.reduce((s, p) => s + p.rss, 0) / 1048576) };
}

async function ready(role, port) {
  const pid = Number(readFileSync(`${work}/${role}.pid`, 'utf8'));
  const started = Number(readFileSync(`${work}/${role}.started`, 'utf8'));
  for (;;) {
    const res = await fetch(`http://127.0.0.1:${port}/healthz/ready`).catch(() => undefined);
    if (res?.status === 200) {
      const figures = { role, readyS: +((Date.now() - started) / 1000).toFixed(2), ...tree(pid) };
      console.log(`run-roles: ${JSON.stringify(figures)}`);
      return;
    }
    try { process.kill(pid, 0); } catch { throw new Error(`${role} exited before it was ready`); }
    if (performance.now() - t0 > 240_000) throw new Error(`${role} not ready within 240 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** GET requests the site has served so far. */
const served = () => readFileSync(`${work}/site.log`, 'utf8').split('\n').filter((l) => l.startsWith('site: GET')).length;

async function png(res, what, before) {
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200 || !body.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47]))) {
    throw new Error(`${what}: ${res.status} ${body.subarray(0, 300).toString('utf8')}`);
  }
  const now = served() - before;
  if (now === 0) throw new Error(`${what}: a PNG, but the site served nothing for it`);
  console.log(`run-roles: ${what}: 200, a ${body.length}-byte PNG; the site served ${now} request(s) for it, through the guard`);
}

if (mode === 'roles') {
  await Promise.all([ready('policy', 9081), ready('guard', 9128), ready('renderer', 9082)]);
  const authz = await fetch('http://127.0.0.1:8081/authz/v1/screenshot', { method: 'POST', headers: { authorization: `Bearer ${key}` } });
  const lease = authz.headers.get('x-tintype-lease');
  if (authz.status !== 200 || lease === null) throw new Error(`policy /authz: ${authz.status} ${await authz.text()}`);
  const before = served();
  const res = await fetch('http://127.0.0.1:8082/v1/screenshot', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-tintype-lease': lease, 'x-tintype-key': authz.headers.get('x-tintype-key') ?? '' },
    body: JSON.stringify(PAGE),
  });
  await png(res, 'renderer + browser, POST /v1/screenshot with policy\'s lease', before);
} else if (mode === 'start') {
  await ready('start', 9080);
  const made = execFileSync('unshare', ['--mount', '--propagation', 'private', `${work}/run-container`, `${process.env.TINTYPE_ALL_ROOT}`, `${work}/tmp-start`, '10001:10001:10001', `${work}/startkeys.env`, `${work}/browser-socket`, '--',
    '/usr/bin/tini', '-s', '--', 'tintype', 'keys', 'create', '--plan', 'free', '--name', 'start'], { encoding: 'utf8' });
  const secret = /sk_[A-Za-z0-9_-]+/.exec(made)?.[0];
  if (secret === undefined) throw new Error(`tintype keys create printed no secret: ${made}`);
  const before = served();
  const res = await fetch('http://127.0.0.1:8080/v1/screenshot', {
    method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` }, body: JSON.stringify(PAGE),
  });
  await png(res, 'tintype start, POST /v1/screenshot with a key', before);
} else {
  throw new Error(`drive.mjs: unknown mode ${mode}`);
}
