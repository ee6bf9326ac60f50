/**
 * Waiting for a database that is not there yet: `tintype migrate` may start before PostgreSQL
 * does (a chart installed beside its database, whose hook Job runs first; docs/helm.md "Upgrade").
 * Only "cannot reach it yet" is tried again; a refusal (a wrong password, a missing database)
 * fails at once.
 */

/** Error codes of a server not reachable yet: the socket's, DNS's, and PostgreSQL's own while it starts or stops. */
const NOT_YET = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', '57P03', '57P01']);

/** pg's own errors without a code: its connect timeout, and a server that hung up during start-up. */
const NOT_YET_MESSAGE = /timeout exceeded when trying to connect|Connection terminated/;

/** Why `err` means the database cannot be reached yet (its code, or `timeout`), or undefined when it is something else. */
export function notReachableYet(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && NOT_YET.has(code)) return code;
  if (err instanceof Error && NOT_YET_MESSAGE.test(err.message)) return 'timeout';
  return undefined;
}

export interface ReachOptions {
  /** Epoch ms after which the last error is thrown instead of trying again. */
  deadline: number;
  /** Pause between attempts. */
  intervalMs: number;
  /** Told why before each pause (an error code, never the address or credentials). */
  onWait(why: string): void;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

/** Runs `attempt` until it resolves, trying again while the database is not reachable yet and the deadline allows. */
export async function untilReachable<T>(attempt: () => Promise<T>, o: ReachOptions): Promise<T> {
  const now = o.now ?? Date.now;
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)));
  for (;;) {
    try {
      return await attempt();
    } catch (err) {
      const why = notReachableYet(err);
      const left = o.deadline - now();
      if (why === undefined || left <= 0) throw err;
      o.onWait(why);
      await sleep(Math.min(o.intervalMs, left));
    }
  }
}
