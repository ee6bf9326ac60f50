/**
 * Policy's renderer listener under a flood of half-sent claims (docs/security.md "The meter's
 * walls"): a real `tintype policy` (SQLite), then `--connections` connections from eight loopback
 * addresses, each sending the headers of `POST /claim` without the renderer token, announcing a
 * body of 9,000 bytes and sending half of it. Baseline in the same run: the same policy's
 * resident memory before the flood. Figures: its memory with the flood held, and how many of
 * the connections it still holds (the rest were answered 401 or closed at its connection caps).
 *
 * `npm run bench -- policy-flood [--connections 16000] [--hold-s 5]`
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startPolicyProcess } from '../test/policy/process.ts';
import { printMachine, round2 } from './machine.ts';

const { values: opts } = parseArgs({
  args: process.argv.slice(3),
  options: { connections: { type: 'string', default: '16000' }, 'hold-s': { type: 'string', default: '5' } },
});
const CONNECTIONS = Number(opts.connections);
const HOLD_MS = Number(opts['hold-s']) * 1000;
const MiB = 1024 * 1024;

/** Resident memory of process `pid`, in MiB. */
function rssMiB(pid: number): number {
  const kb = Number(/^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN);
  return round2((kb * 1024) / MiB);
}

const machine = printMachine();
const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-bench-flood-'));
const policy = await startPolicyProcess({ TINTYPE_DATA_DIR: dir, TINTYPE_LOG_LEVEL: 'info' });
try {
  await new Promise((resolve) => setTimeout(resolve, 1_000));
  const baseline = rssMiB(policy.pid);
  const head = `POST /claim HTTP/1.1\r\nhost: policy\r\ncontent-type: application/json\r\ncontent-length: 9000\r\n\r\n${'{'.repeat(4_500)}`;
  let open = 0;
  let answered = 0;
  const sockets: net.Socket[] = [];
  for (let i = 0; i < CONNECTIONS; i++) {
    const s = net.connect({ host: '127.0.0.1', port: policy.settlePort, localAddress: `127.0.0.${(i % 8) + 2}` });
    s.on('error', () => {});
    s.once('connect', () => {
      open += 1;
      s.write(head);
    });
    s.once('data', () => (answered += 1));
    s.once('close', () => (open -= 1));
    sockets.push(s);
    // Let the kernel's accept queue drain now and then.
    if (i % 500 === 499) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await new Promise((resolve) => setTimeout(resolve, HOLD_MS));
  const flooded = rssMiB(policy.pid);
  const held = open;
  for (const s of sockets) s.destroy();
  console.log(`policy resident memory: ${baseline} MiB idle, ${flooded} MiB with ${CONNECTIONS} half-sent claims sent (${held} connections still open, ${answered} answered)`);
  console.log(JSON.stringify({
    bench: 'policy-flood', machine, connections: CONNECTIONS, holdS: HOLD_MS / 1000,
    rssIdleMiB: baseline, rssFloodedMiB: flooded, ratio: round2(flooded / baseline), connectionsHeld: held, answered,
  }));
} finally {
  await policy.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
}
