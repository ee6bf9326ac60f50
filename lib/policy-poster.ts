/**
 * JSON posts from a renderer to policy's renderer listener (docs/architecture.md §2, "settle"):
 * the claims, releases and settles of lib/policy-contract.ts and the egress audit posts of
 * lib/egress-audit.ts, over kept-alive node:http connections, with the active trace context.
 */
import http from 'node:http';
import { context, propagation } from '@opentelemetry/api';
import { rendererTokenHeaders } from './renderer-token.ts';

/**
 * How long one post may take before the attempt is given up: twice policy's store budget
 * (policy/store/store.ts STORE_BUDGET_MS), so only a policy that has gone (or a connection to one)
 * reaches it, and a retry on a fresh connection comes soon after.
 */
export const POLICY_CALL_TIMEOUT_MS = 3_000;

export interface PolicyPoster {
  /** Posts `payload` as JSON to `path`; resolves with the answer's status, rejects when none came. */
  post(path: string, payload: unknown): Promise<number>;
  /** Closes every connection. */
  close(): void;
}

/** `token`: the renderer token (lib/renderer-token.ts), sent with every post; policy refuses a post without it. */
export function policyPoster(policyUrl: string, options: { maxSockets: number; token?: string; timeoutMs?: number; idleMs?: number }): PolicyPoster {
  const base = new URL(policyUrl);
  // `timeout` drops a free socket idle this long: below policy's keepAliveTimeout (120 s,
  // policy/server.ts), so this side lets go first and a post never lands on a closing socket.
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.maxSockets, timeout: options.idleMs ?? 60_000 });
  // A kept-alive connection that failed (reset, or no answer in time) most likely led to a policy
  // pod that has gone; its other free connections lead there too. They are dropped, so the next
  // attempt connects afresh to the Service and reaches a pod that is there.
  const dropFreeSockets = (): void => {
    for (const sockets of Object.values(agent.freeSockets)) for (const socket of sockets ?? []) socket.destroy();
  };
  return {
    post(path, payload) {
      const body = JSON.stringify(payload);
      const headers: Record<string, string> = {
        'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...rendererTokenHeaders(options.token),
      };
      propagation.inject(context.active(), headers);
      return new Promise<number>((resolve, reject) => {
        const req = http.request(
          { host: base.hostname, port: base.port, method: 'POST', path, headers, agent, timeout: options.timeoutMs ?? POLICY_CALL_TIMEOUT_MS },
          (res) => {
            res.resume();
            res.once('end', () => resolve(res.statusCode ?? 0));
            res.once('error', reject);
          },
        );
        req.once('timeout', () => req.destroy(new Error(`${path} timed out`)));
        req.once('error', (err) => {
          if (req.reusedSocket) dropFreeSockets();
          reject(err);
        });
        req.end(body);
      });
    },
    close: () => agent.destroy(),
  };
}
