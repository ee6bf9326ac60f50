/**
 * A bounded load of ordinary calls against a running service: `clients` loops, each sending one
 * request after another until `durationMs` has passed (or `stop` is called), a seeded mix of
 * renders (misses), cache hits, OG cards and pings over the given keys. It records every answer
 * by status and error code, and, per key, the metered answers a client received (spec Part 8
 * rule 4: 200, 502, 504), which the ledger must hold exactly once.
 */
import http from 'node:http';

/** What a client may call; the weights of the mix. */
export type Kind = 'render' | 'hit' | 'card' | 'ping';
const MIX: Array<[Kind, number]> = [['render', 3], ['hit', 4], ['card', 2], ['ping', 1]];
const METERED = new Set([200, 502, 504]);

export interface LoadKey {
  id: string;
  secret: string;
}

export interface LoadOptions {
  port: number;
  keys: readonly LoadKey[];
  clients: number;
  durationMs: number;
  seed: number;
  /** A per-request bound on the client side, past the service's own render budget. */
  requestTimeoutMs?: number;
}

export interface LoadResult {
  requests: number;
  /** `"200"`, `"503 busy"`, `"429 rate_limited"`, …, and `"no answer"` for a connection that ended without one. */
  answersByStatus: Record<string, number>;
  /** 5xx answers other than 503 `busy` and `guard_unverified`. */
  unexpected5xx: number;
  /** Metered answers received, per key id. */
  meteredReceived: Map<string, number>;
}

/** A small deterministic generator, so a run can be repeated with its seed. */
export function random(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 2 ** 32;
  };
}

interface Request {
  method: string;
  path: string;
  body?: string;
}

/** One request of the mix; `n` makes render misses unique. */
export function requestOf(kind: Kind, n: number, pick: () => number): Request {
  switch (kind) {
    case 'render':
      return { method: 'POST', path: '/v1/html-to-image', body: JSON.stringify({ html: `<h1>load ${n} ${pick()}</h1>`, width: 320, height: 200 }) };
    case 'hit':
      return { method: 'POST', path: '/v1/html-to-image', body: JSON.stringify({ html: `<h1>hot ${Math.floor(pick() * 4)}</h1>`, width: 320, height: 200 }) };
    case 'card':
      return { method: 'GET', path: `/v1/og?template=title&title=${encodeURIComponent(`Card ${Math.floor(pick() * 50)}`)}` };
    case 'ping':
      return { method: 'GET', path: '/v1/ping' };
  }
}

function pickKind(pick: () => number): Kind {
  const total = MIX.reduce((s, [, w]) => s + w, 0);
  let r = pick() * total;
  for (const [kind, w] of MIX) if ((r -= w) < 0) return kind;
  return 'ping';
}

/** The status (and error code) of one answer, or undefined when none came. */
export function exchange(port: number, key: LoadKey, req: Request, timeoutMs: number, agent: http.Agent): Promise<{ status: number; error?: string } | undefined> {
  return new Promise((resolve) => {
    const headers: Record<string, string> = { authorization: `Bearer ${key.secret}` };
    if (req.body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(req.body));
    }
    const r = http.request({ host: '127.0.0.1', port, method: req.method, path: req.path, headers, agent, timeout: timeoutMs }, (res) => {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', () => resolve({ status }));
      res.on('end', () => {
        let error: string | undefined;
        if (status >= 400 && /json/.test(String(res.headers['content-type']))) {
          try {
            const e = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error?: unknown }).error;
            if (typeof e === 'string') error = e;
          } catch {
            // not JSON after all: counted by status alone
          }
        }
        resolve(error === undefined ? { status } : { status, error });
      });
    });
    r.on('timeout', () => r.destroy());
    r.on('error', () => resolve(undefined));
    r.end(req.body);
  });
}

/**
 * Runs the load; `stop()` ends it early (each client finishes the request it is in);
 * `outstanding()` is how many requests are sent and not yet answered at this moment.
 */
export function runLoad(o: LoadOptions): { done: Promise<LoadResult>; stop(): void; outstanding(): number } {
  let stopped = false;
  const result: LoadResult = { requests: 0, answersByStatus: {}, unexpected5xx: 0, meteredReceived: new Map() };
  const until = Date.now() + o.durationMs;
  const agent = new http.Agent({ keepAlive: true, maxSockets: o.clients });
  let n = 0;
  let waiting = 0;
  const client = async (index: number): Promise<void> => {
    const pick = random(o.seed * 1000 + index);
    while (!stopped && Date.now() < until) {
      const key = o.keys[Math.floor(pick() * o.keys.length)]!;
      waiting += 1;
      const a = await exchange(o.port, key, requestOf(pickKind(pick), n++, pick), o.requestTimeoutMs ?? 60_000, agent);
      waiting -= 1;
      result.requests += 1;
      const label = a === undefined ? 'no answer' : a.error === undefined ? String(a.status) : `${a.status} ${a.error}`;
      result.answersByStatus[label] = (result.answersByStatus[label] ?? 0) + 1;
      if (a === undefined) continue;
      if (a.status >= 500 && !(a.status === 503 && (a.error === 'busy' || a.error === 'guard_unverified'))) result.unexpected5xx += 1;
      if (METERED.has(a.status)) result.meteredReceived.set(key.id, (result.meteredReceived.get(key.id) ?? 0) + 1);
    }
  };
  const done = Promise.all(Array.from({ length: o.clients }, (_, i) => client(i))).then(() => {
    agent.destroy();
    return result;
  });
  return { done, stop: () => void (stopped = true), outstanding: () => waiting };
}
