/**
 * The renderer role as `tintype renderer` and `tintype start` run it (docs/architecture.md §1):
 * the server, the Chromium pool, OG threads, the cache, and the guard the renderer goes through:
 * its own on a private unix socket, or the one GUARD_URL names (docs/architecture.md §3).
 */
import { type Config, requireRendererToken } from '../lib/config.ts';
import { lifecycleGroup, type Lifecycle } from '../lib/lifecycle.ts';
import { quietWhile, type Logger } from '../lib/log.ts';
import { Registry } from '../lib/metrics.ts';
import { agentSettler, type Settler } from '../lib/policy-contract.ts';
import { auditPoster } from '../lib/egress-audit.ts';
import { createJudge, createPrivateGuard, guardSettings, judgeUrl, type PrivateGuard } from '../guard/index.ts';
import { createBrowserPool, guardEndpointFromConfig, type EgressAuditSink, type GuardEndpoint } from './browser/index.ts';
import { createRenderCache } from './cache/index.ts';
import { createOgDrawer } from './og/index.ts';
import type { UrlJudge } from './operations/index.ts';
import { createRendererServer, type RendererServer } from './server/index.ts';

/** A running renderer role: server, Chromium pool, OG threads, cache and (unless GUARD_URL) its own guard. */
export interface RendererRole extends Lifecycle {
  server: RendererServer;
  /** Ready for renders: healthy and the start-up self-test passed (spec Part 1; /healthz/ready). */
  ready(): boolean;
}

/** How `tintype start` embeds the role; `tintype renderer` uses the defaults. */
export interface RendererRoleOptions {
  registry?: Registry;
  /** Interface to listen on; all when omitted. `tintype start` passes 127.0.0.1 (docs/operations.md "The renderer"). */
  host?: string;
  /** Start the role's own guard on a private unix socket even when GUARD_URL is set. */
  ownGuard?: boolean;
  /** Where leases settle; by default kept-alive HTTP to TINTYPE_POLICY_URL, closed with the role. */
  settler?: Settler;
  /** The ports of the rest of the process (`tintype start`): its own guard refuses them at loopback. */
  servicePorts?: () => Iterable<number>;
}

/** Where settles go: policy over kept-alive HTTP, or nowhere (logged once) when no policy is configured. */
function settlerFor(config: Readonly<Config>, logger: Logger): Settler & { close(): void } {
  // A settle follows every answer: node:http with a kept-alive agent, carrying the trace
  // context, costs a fraction of fetch per call (bench/edge.ts); the server retries twice.
  // Policy takes calls only with the renderer token (lib/renderer-token.ts): without it, no start.
  if (config.policyUrl !== undefined) return agentSettler(config.policyUrl, { token: requireRendererToken(config) });
  // Without policy no lease can be claimed, so none is used: every leased request is 503 busy.
  logger.warn('renderer.no_policy_url', { detail: 'TINTYPE_POLICY_URL is unset; no lease can be claimed, every request is answered 503 busy' });
  const unreachable = async (): Promise<never> => {
    throw new Error('TINTYPE_POLICY_URL is unset');
  };
  return { claim: unreachable, release: unreachable, settle: unreachable, close: () => {} };
}

/**
 * Builds every part of the renderer from the settings. Start order: guard ▸ cache ▸ OG threads ▸
 * server and pool; stopped in reverse, the server before the pool, then the settler.
 */
export async function createRendererRole(config: Readonly<Config>, logger: Logger, options: RendererRoleOptions = {}): Promise<RendererRole> {
  const registry = options.registry ?? new Registry();
  let guard: PrivateGuard | undefined;
  let endpoint: GuardEndpoint;
  let judge: UrlJudge;
  // Its own guard counts the renderer's ports and the rest of the process's as the service itself
  // (asked only once requests are judged, after the server below exists).
  const servicePorts = function* (): Iterable<number> {
    yield* server.ports();
    yield* options.servicePorts?.() ?? [];
  };
  // Its own guard's decisions while the pool's self-test has not passed are the self-test's (no
  // render is taken before): at debug, its passing one info line (docs/security.md "Start-up self-test").
  let selfTestPassed = (): boolean => false;
  if (config.guardUrl === undefined || options.ownGuard === true) {
    guard = await createPrivateGuard({
      ...guardSettings(config),
      ...(config.guardSocket === undefined ? {} : { socket: config.guardSocket }),
      servicePorts,
      logger: quietWhile(logger.child({ component: 'guard' }), new Set(['guard.decision']), () => !selfTestPassed()),
      metrics: registry,
    });
    const own = guard;
    endpoint = { socketPath: own.socket, tokens: own.tokens, tunnelsPerRender: config.guardMaxTunnelsPerRender, takeTally: (token) => own.settledTally(token), openRender: (token, lease) => own.openRender(token, lease) };
    judge = (url) => judgeUrl(url, own.judge());
  } else {
    endpoint = guardEndpointFromConfig(config);
    // The same rules as the guard, for the page address before a slot (spec 4.4 rule 3); the
    // guard still judges every connection Chromium makes.
    const own = await createJudge({ ...guardSettings(config), servicePorts, logger });
    judge = (url) => judgeUrl(url, own);
  }
  // A keyed render's guard decisions go to policy's audit trail after the render (lib/egress-audit.ts).
  const audit = config.policyUrl === undefined ? undefined : auditPoster(config.policyUrl, {
    token: config.rendererToken,
    onLost: (why) => logger.warn('egress_audit.lost', { why }),
  });
  const egressAudit: EgressAuditSink | undefined = audit === undefined ? undefined : (lease, entries, dropped) => audit.send({ lease, entries, dropped });
  const pool = createBrowserPool({
    config, logger: logger.child({ component: 'browser' }), registry, guard: endpoint, ...(egressAudit === undefined ? {} : { egressAudit }),
  });
  selfTestPassed = () => pool.selfTestPassed();
  const cache = createRenderCache(config, logger, registry);
  // OG cards are drawn on worker threads, inside the same render budget (spec 4.5; Part 7 504).
  const og = createOgDrawer({ threads: config.ogThreads, maxQueue: config.ogQueue, drawTimeoutMs: config.renderTimeoutMs, registry });
  const ownSettler = options.settler === undefined ? settlerFor(config, logger) : undefined;
  const settler = options.settler ?? ownSettler!;
  const server = createRendererServer({
    ...(egressAudit === undefined ? {} : { egressAudit }),
    config, logger, registry, pool, cache, judge, settler, og, ...(options.host !== undefined ? { host: options.host } : {}),
  });
  const parts = lifecycleGroup(logger, 'renderer.stop_failed');
  if (ownSettler !== undefined) parts.add({ stop: () => ownSettler.close() });
  if (audit !== undefined) parts.add({ stop: () => audit.close() });
  // The server listens before the pool's self-test so /healthz/live answers during it (renders
  // answer guard_unverified until it passed, spec Part 1), and stops before the pool, so answers
  // in flight finish on a live Chromium and settle: one part, the server in front of the pool.
  const serving = {
    async start() {
      await server.start();
      await pool.start();
    },
    async stop(signal?: NodeJS.Signals) {
      const inOrder = lifecycleGroup(logger, 'renderer.stop_failed');
      inOrder.add(pool, server);
      await inOrder.stop(signal);
    },
  };
  let running = false;
  const healthy = (): boolean => running && server.healthy() && pool.healthy() && (guard?.healthy() ?? true);
  return {
    server,
    async start() {
      await parts.start(...(guard === undefined ? [] : [guard]), cache, og, serving);
      running = true;
    },
    async stop(signal) {
      running = false;
      await parts.stop(signal);
    },
    healthy,
    ready: () => healthy() && pool.selfTestPassed(),
  };
}
