/**
 * A test's target listens below the kernel's ephemeral range, where no bind(0) of the service
 * lands (test/lib/listen-beside.ts), and two of them on one address never share a port.
 */
import { readFileSync } from 'node:fs';
import net from 'node:net';
import t from 'tap';
import { listenBesideService } from './listen-beside.ts';

const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

t.test('below the ephemeral range, listening, each on a port of its own', async (t) => {
  const servers = Array.from({ length: 20 }, () => net.createServer((s) => s.end('here')));
  t.teardown(() => Promise.all(servers.map((s) => new Promise((r) => s.close(r)))));
  const ports: number[] = [];
  for (const s of servers) ports.push(await listenBesideService(s, '127.0.0.2'));
  t.ok(ports.every((p) => p >= 1024 && p < low), `every port below ${low}`);
  t.equal(new Set(ports).size, ports.length, 'no two share a port');
  const reply = await new Promise<string>((resolve, reject) => {
    const c = net.connect(ports[0]!, '127.0.0.2');
    let text = '';
    c.on('data', (d) => (text += d.toString())).on('end', () => resolve(text)).on('error', reject);
  });
  t.equal(reply, 'here', 'the server answers at the port returned');
});
