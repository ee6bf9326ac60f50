/**
 * The embedded edge's budget cannot be spent by bodies without a key (docs/security.md "The
 * meter's walls"): the key is checked on the headers before a byte of a body is read, so four
 * addresses each holding four bodies of 4 MiB − 1, half sent, leave a keyed 40-byte render from a
 * fifth address to be answered. The real embedded edge and a real `tintype policy` (SQLite) with a
 * key made by `tintype keys create`; the renderer is a stand-in on a real socket.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import t from 'tap';
import { createEdge } from '../../envoy/edge/edge.ts';
import { MAX_BODY_BYTES } from '../../lib/policy-contract.ts';
import { runTintype, startPolicyProcess } from '../policy/process.ts';
import { rendererStub } from './stubs.ts';

const quiet = { debug() {}, info() {}, warn() {}, error() {}, child() { return quiet; } };

/** Opens a connection from `from`, writes `text`, and resolves with the first bytes answered (or '' at close). */
function send(port: number, from: string, text: string): { socket: net.Socket; answered: Promise<string> } {
  const socket = net.connect({ port, host: '127.0.0.1', localAddress: from });
  socket.on('error', () => {});
  let received = '';
  const answered = new Promise<string>((resolve) => {
    socket.on('data', (c: Buffer) => {
      received += c.toString('latin1');
      if (received.includes('\r\n\r\n')) resolve(received);
    });
    socket.once('close', () => resolve(received));
  });
  socket.write(text);
  return { socket, answered };
}

const statusOf = (text: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 0);

t.test('four addresses holding sixteen 4 MiB bodies all but sent without a key: a keyed 40-byte render from a fifth is answered', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-unkeyed-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const made = await runTintype(['keys', 'create', '--plan', 'pro'], { TINTYPE_DATA_DIR: dir });
  const secret = /^secret: (sk_[A-Za-z0-9_-]{43})$/m.exec(made.stdout)?.[1];
  t.ok(secret, 'a key made');
  const policy = await startPolicyProcess({ TINTYPE_DATA_DIR: dir });
  t.teardown(() => policy.kill('SIGTERM'));
  const renderer = await rendererStub();
  t.teardown(() => renderer.close());
  // As `tintype start` builds it; its defaults are the ones under test.
  const edge = createEdge({
    policyUrl: `http://127.0.0.1:${policy.port}`, rendererUrls: [renderer.url], host: '127.0.0.1', port: 0, openapi: Buffer.from('{}'), logger: quiet,
  });
  await edge.start();
  t.teardown(() => edge.stop());

  const strangers = ['127.0.0.1', '127.0.0.2', '127.0.0.3', '127.0.0.4'].flatMap((from) => Array.from({ length: 4 }, () => {
    const c = send(edge.port(), from, `POST /v1/screenshot HTTP/1.1\r\nhost: tintype\r\ncontent-type: application/json\r\ncontent-length: ${MAX_BODY_BYTES - 1}\r\n\r\n`);
    // All of the body but its last byte, which never comes: as much as the edge would read of it.
    const flushed = new Promise<void>((resolve) => c.socket.write(Buffer.alloc(MAX_BODY_BYTES - 2, 0x20), () => resolve()));
    return { ...c, flushed };
  }));
  t.teardown(() => {
    for (const c of strangers) c.socket.destroy();
  });
  // Every stranger's body is out of its socket (or refused) before the keyed request is sent.
  await Promise.all(strangers.map((c) => Promise.race([c.flushed, c.answered])));
  await new Promise((resolve) => setTimeout(resolve, 2_000));

  const body = JSON.stringify({ url: 'https://example.com/abcdefghij' });
  t.equal(body.length, 40);
  const keyed = send(edge.port(), '127.0.0.5', `POST /v1/screenshot HTTP/1.1\r\nhost: tintype\r\nauthorization: Bearer ${secret}\r\n` +
    `content-type: application/json\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
  const answer = await keyed.answered;
  t.equal(statusOf(answer), 200, `the keyed render is forwarded and answered (${answer.split('\r\n', 1)[0]})`);
  const refused = await Promise.all(strangers.map((c) => c.answered));
  t.same(refused.map(statusOf), Array(16).fill(401), 'each stranger is refused by policy on its headers, its body never waited for');
});
