/**
 * Envoy's preStop (docs/helm.md, "Rolling restarts"): the kubelet's `GET /drained` on the drain
 * helper's port is answered 200 once the helper's drain (envoy/drain.ts) is over, so SIGTERM
 * reaches Envoy as soon as its connections are gone instead of after a fixed sleep. The drain is
 * begun only by the helper's own SIGTERM, never by a request: the kubelet signals the helper and
 * runs Envoy's preStop at the same moment, so a GET waits at most `startWaitMs` for that drain to
 * begin, then answers 409. A request can hold one of a few connections for a while; it cannot
 * begin, hasten or end a drain (docs/security.md).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../lib/log.ts';

export interface DrainedHook {
  port: number;
  /** The drain has begun; GET /drained answers when `drain` settles. */
  begin(drain: Promise<unknown>): void;
  /** Resolves once a GET /drained was answered 200, or after `ms`. */
  answeredWithin(ms: number): Promise<boolean>;
  close(): Promise<void>;
}

export interface DrainedHookOptions {
  port: number;
  host?: string;
  startWaitMs: number;
  logger: Logger;
}

export async function startDrainedHook(o: DrainedHookOptions): Promise<DrainedHook> {
  let drain: Promise<unknown> | undefined;
  let begun!: () => void;
  const beginning = new Promise<void>((r) => (begun = r));
  let answered!: () => void;
  const answer = new Promise<void>((r) => (answered = r));
  const server = http.createServer((req, res) => {
    if (req.url !== '/drained') return void res.writeHead(404).end();
    if (req.method !== 'GET') return void res.writeHead(405, { allow: 'GET' }).end();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((r) => (timer = setTimeout(() => r(false), o.startWaitMs)));
    void Promise.race([beginning.then(() => true as const), late]).then(async (began) => {
      clearTimeout(timer);
      if (!began) return void res.writeHead(409, { 'content-type': 'text/plain' }).end('not draining\n');
      await drain!.catch(() => undefined);
      res.writeHead(200, { 'content-type': 'text/plain' }).end('drained\n', () => answered());
    });
  });
  // The kubelet asks once per Envoy container; a handful of connections is plenty.
  server.maxConnections = 8;
  server.headersTimeout = 5_000;
  server.requestTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    begin(d) {
      drain = d;
      begun();
    },
    async answeredWithin(ms) {
      let timer: NodeJS.Timeout | undefined;
      const r = await Promise.race([answer.then(() => true), new Promise<boolean>((res) => (timer = setTimeout(() => res(false), ms)))]);
      clearTimeout(timer);
      if (!r) o.logger.warn('envoy_drain.prestop_not_seen', { waited_ms: ms });
      return r;
    },
    close: () => new Promise<void>((r) => {
      server.close(() => r());
      server.closeAllConnections();
    }),
  };
}
