/**
 * `tintype start` over its life: a client that goes away mid-render frees its lease
 * at once and is not metered; SIGKILL then restart loses no acknowledged usage and expires the
 * leases that were in flight unmetered; SIGTERM stops accepting, lets the render in flight
 * finish and settle, closes Chromium and exits 0.
 */
import t from 'tap';
import { readFileSync, readdirSync } from 'node:fs';
import net from 'node:net';
import http from 'node:http';
import { bearer, cleanup, jsonWith, startService, type Service } from './service.ts';
import { startSite, type Site } from './site.ts';

let site: Site;
const ENV = {
  TINTYPE_SLOTS: '2',
  TINTYPE_RENDER_TIMEOUT_MS: '3000',
  TINTYPE_LEASE_GRACE_MS: '0',
  GUARD_ALLOW_CIDRS: '127.0.0.2/32',
};

t.before(async () => {
  site = await startSite();
});
t.teardown(async () => {
  await site.close();
  cleanup();
});

/** Every process under `pid` (by /proc parent links). */
function descendants(pid: number): number[] {
  const parents = new Map<number, number[]>();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      parents.set(ppid, [...(parents.get(ppid) ?? []), Number(d)]);
    } catch {
      // gone meanwhile
    }
  }
  const out: number[] = [];
  const walk = (p: number): void => {
    for (const c of parents.get(p) ?? []) {
      out.push(c);
      walk(c);
    }
  };
  walk(pid);
  return out;
}

/** Whether `pid` still runs (a zombie waiting for its reaper does not). */
const alive = (pid: number): boolean => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
};

/** Sends a render and abandons it once `held` has been asked for (the render is in flight). */
async function abandonedRender(svc: Service, secret: string, held: string): Promise<void> {
  const body = JSON.stringify({ html: `<img src="${site.base}/hold/${held}.png">`, width: 40, height: 40 });
  const req = http.request({ host: '127.0.0.1', port: svc.port, method: 'POST', path: '/v1/html-to-image', headers: { ...jsonWith(secret), 'content-length': String(Buffer.byteLength(body)) } });
  req.on('error', () => {});
  req.end(body);
  await site.arrived(held);
  req.destroy();
}

t.test('lifecycle of one data dir', async (t) => {
  let svc = await startService({ env: ENV });
  const dataDir = svc.dataDir;
  const free = await svc.key('free');
  const pro = await svc.key('pro');

  await t.test('a client gone mid-render frees the lease at once and is not metered', async (t) => {
    await abandonedRender(svc, free.secret, 'gone');
    const rows = await svc.ledgerOf(free.id, 1);
    t.match(rows[0], { operation: 'html-to-image', status: 499, metered: 0, outcome: 'settled' }, 'settled as client closed, unmetered');
    t.equal(svc.used(free.id), 0, 'no quota spent');
    const next = await svc.call({ method: 'POST', path: '/v1/html-to-image', headers: jsonWith(free.secret), body: JSON.stringify({ html: '<p>next</p>', width: 40, height: 40 }) });
    t.equal(next.status, 200, 'the free key renders again: its one concurrency place was freed');
    site.release('gone');
  });

  await t.test('SIGKILL then restart: acknowledged usage kept, the lease in flight expires unmetered', async (t) => {
    for (const path of ['/v1/ping', '/v1/og?template=title&title=kept']) {
      t.equal((await svc.call({ path, headers: bearer(pro.secret) })).status, 200, path);
    }
    const acknowledged = await svc.ledgerOf(pro.id, 2);
    const usedBefore = svc.used(pro.id);
    t.equal(usedBefore, 2);
    // One render in flight when the process dies.
    const inFlight = svc.call({ method: 'POST', path: '/v1/html-to-image', headers: jsonWith(free.secret), body: JSON.stringify({ html: `<img src="${site.base}/hold/killed.png">`, width: 40, height: 40 }) }).catch(() => undefined);
    await site.arrived('killed');
    const chromium = descendants(svc.pid);
    t.ok(chromium.length > 0, 'Chromium runs under the process');
    t.equal(await svc.signal('SIGKILL'), null, 'killed');
    await inFlight;
    site.release('killed');

    svc = await startService({ env: ENV, dataDir });
    t.same(svc.ledger(pro.id), acknowledged, 'every settled call is still in the ledger');
    t.equal(svc.used(pro.id), usedBefore, 'and in the quota');
    // The lease of the killed render expires (budget + grace) and frees the free key's place.
    const rows = await svc.ledgerOf(free.id, 3);
    t.match(rows[2], { operation: 'html-to-image', status: null, metered: 0, outcome: 'unsettled' }, 'expired unsettled, not metered');
    t.equal(svc.used(free.id), 1, 'only the one render that answered 200 is counted');
    const again = await svc.call({ method: 'POST', path: '/v1/html-to-image', headers: jsonWith(free.secret), body: JSON.stringify({ html: '<p>after restart</p>', width: 40, height: 40 }) });
    t.equal(again.status, 200, 'the place is free again');
  });

  await t.test('SIGTERM: stop accepting, finish the render in flight, settle it, close Chromium, exit 0', async (t) => {
    const render = svc.call({ method: 'POST', path: '/v1/html-to-image', headers: jsonWith(pro.secret), body: JSON.stringify({ html: `<img src="${site.base}/hold/term.png">`, width: 40, height: 40 }) });
    await site.arrived('term');
    const chromium = descendants(svc.pid);
    t.ok(chromium.length > 0, 'Chromium runs under the process');
    const before = svc.ledger(pro.id).length;
    const exit = svc.signal('SIGTERM');
    // Stopped accepting: a new connection is refused (waited for, not timed).
    for (;;) {
      const refused = await new Promise<boolean>((resolve) => {
        const s = net.connect(svc.port, '127.0.0.1');
        s.once('connect', () => {
          s.destroy();
          resolve(false);
        });
        s.once('error', () => resolve(true));
      });
      if (refused) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    t.pass('new connections are refused');
    site.release('term');
    const answer = await render;
    t.equal(answer.status, 200, 'the render in flight finished');
    t.equal(await exit, 0, 'exit 0');
    // The namespace's last processes are reaped by the kernel just after the exit: waited for.
    while (chromium.some(alive)) await new Promise((r) => setTimeout(r, 50));
    t.pass('Chromium and its helpers are gone');
    const rows = svc.ledger(pro.id);
    t.equal(rows.length, before + 1, 'its lease was settled before exit');
    t.match(rows.at(-1), { operation: 'html-to-image', status: 200, metered: 1, outcome: 'settled' });
  });
});
