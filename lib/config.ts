/**
 * The one place that reads process.env. Every setting of docs/operations.md "Settings" and
 * the role-specific ones is parsed once, validated and frozen; a bad value throws a
 * ConfigError naming the variable and what it accepts, and the command stops with it.
 */
import type { KeyObject } from 'node:crypto';
import path from 'node:path';
import { leaseKeySeed, parseLeasePrivateKey, parseLeasePublicKey } from './lease.ts';
import { RenderTokens, TOKEN_KEY_MIN_BYTES } from './render-token.ts';
import { RENDERER_TOKEN_FORM } from './renderer-token.ts';
import { parseRedisUrl, REDIS_URL_FORMS } from './redis-connect.ts';

/** A setting that cannot be used; the message names the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

export type Isolation = 'netns' | 'pod';

/** The render budget when `TINTYPE_RENDER_TIMEOUT_MS` is unset (docs/operations.md "Settings"). */
export const DEFAULT_RENDER_TIMEOUT_MS = 30_000;

/** Renders one renderer runs at once when `TINTYPE_SLOTS` is unset, and the most it may be set to. */
export const DEFAULT_SLOTS = 2;
/**
 * Tunnels one render may hold at its guard, and through its lane relay (docs/security.md "The
 * guard"): Chromium keeps at most 32 connections per proxy, and WebSockets apart.
 */
export const DEFAULT_TUNNELS_PER_RENDER = 64;
/** The guard's other bounds when unset (docs/operations.md, docs/security.md "The guard"). */
export const GUARD_BOUND_DEFAULTS = Object.freeze({
  maxUnnamedTunnels: 16,
  maxConnections: 4_096,
  maxConnectionsPerPeer: 1_024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 60_000,
});
export const MAX_SLOTS = 64;

/** Connections each of policy's listeners holds when `TINTYPE_POLICY_MAX_CONNECTIONS` is unset. */
export const DEFAULT_POLICY_MAX_CONNECTIONS = 1_024;

/** Of a listener's `max` connections, what one peer may hold (lib/peers.ts): a quarter. */
export function perPeerConnections(max: number): number {
  return Math.floor(max / 4);
}

/** The uid and gid Chromium runs under in netns isolation when the renderer is root (docs/security.md "Chromium isolation"). */
export const DEFAULT_CHROMIUM_UID = 10_999;

export interface Config {
  /** Listen port of the role; undefined means the role's default (docs/architecture.md §1). */
  port: number | undefined;
  /** Admin listener (metrics, /healthz/*); never the public port. */
  adminPort: number | undefined;
  dataDir: string;
  databaseUrl: string | undefined;
  redisUrl: string | undefined;
  /**
   * Policy's counters (burst windows, monthly reservations, render places, leases) in Redis,
   * with keys, plans and the ledger in PostgreSQL: used only together with DATABASE_URL
   * (docs/operations.md "Settings", "Stores"). Never taken from REDIS_URL: the render cache's
   * server is not a place policy state moves to by itself, and a store that changed under a
   * running month would lose its open leases.
   */
  countersUrl: string | undefined;
  plansFile: string | undefined;
  chromiumPath: string | undefined;
  /**
   * pod isolation: the browser container's launcher socket (renderer/browser/launcher/main.ts).
   * Unset, the renderer starts the launcher itself, beside it (one machine, tests).
   */
  browserSocket: string | undefined;
  /**
   * netns isolation, renderer run as root: the uid and gid Chromium runs under (one no other
   * process of the host uses; never 0, never the renderer's own).
   */
  chromiumUid: number;
  slots: number;
  renderTimeoutMs: number;
  maxOutputBytes: number;
  /** Chromium is restarted after this many renders. */
  recycleAfterRenders: number;
  /** Chromium is restarted when its processes' resident memory passes this many MiB. */
  browserMaxRssMb: number;
  /** File cache size bound in bytes. */
  cacheMaxBytes: number;
  isolation: Isolation;
  guardUrl: string | undefined;
  /** Unix socket the guard listens on (in addition to or instead of a port). */
  guardSocket: string | undefined;
  guardDnsServers: readonly string[];
  guardAllowCidrs: readonly string[];
  guardSelfAddresses: readonly string[];
  guardConnectTimeoutMs: number;
  guardIdleTimeoutMs: number;
  guardDnsTimeoutMs: number;
  guardMaxTunnels: number;
  /** Tunnels one render may hold open at a guard (and through its lane relay). */
  guardMaxTunnelsPerRender: number;
  /** Tunnels all requests naming no render may hold open at a guard together. */
  guardMaxUnnamedTunnels: number;
  /** Connections a guard's listeners hold at once, in all and per peer address. */
  guardMaxConnections: number;
  guardMaxConnectionsPerPeer: number;
  /** How long a request's head, and a whole request, may take to arrive at a guard. */
  guardHeadersTimeoutMs: number;
  guardRequestTimeoutMs: number;
  /** GUARD_TOKEN_KEY: what render tokens are made and checked with (lib/render-token.ts). */
  guardTokens: RenderTokens | undefined;
  /** Where a renderer claims and settles leases (policy's renderer listener, `TINTYPE_POLICY_SETTLE_PORT`). */
  policyUrl: string | undefined;
  /** Policy's listener for renderers (claim, release, settle); its ext_authz listener is `port`. */
  policySettlePort: number | undefined;
  /** Whether `tintype policy` also answers `/usage` and `/egress` on its admin port; on its admin socket only when false. */
  policyUsageOpen: boolean;
  /** The token renderers present to policy's renderer listener (lib/renderer-token.ts); policy refuses every call without it. */
  rendererToken: string | undefined;
  /** Connections each of policy's listeners holds at most; a quarter of them from one peer. */
  policyMaxConnections: number;
  /** Grace added to the render budget before an unsettled lease expires. */
  leaseGraceMs: number;
  /** Days policy keeps egress audit records (docs/operations.md "Egress policy and audit"). */
  egressAuditDays: number;
  /** Months of raw ledger records policy keeps (PostgreSQL); undefined keeps every month (docs/operations.md "Ledger retention"). */
  ledgerMonths: number | undefined;
  /** Policy's Ed25519 private key that signs leases; unset on renderers (`tintype start` makes one). */
  leaseSigningKey: KeyObject | undefined;
  /** Ed25519 public keys that verify leases (rotation: several); what a renderer holds. */
  leasePublicKeys: readonly KeyObject[];
  /** Client connections the embedded edge holds at most. */
  edgeMaxConnections: number;
  /** SQLite `synchronous` level for policy state: `normal` survives a killed process, `full` also power loss. */
  sqliteSync: 'normal' | 'full';
  /**
   * How policy comes by its schema: `start` applies the pending migrations as it starts (one
   * machine, `tintype start`); `wait` waits until `tintype migrate` (the chart's hook Job) has
   * applied them, and needs no DDL rights (docs/helm.md, "Upgrade").
   */
  migrate: 'start' | 'wait';
  /**
   * `tintype envoy-drain`: Envoy's admin API, the port of Envoy's preStop (GET /drained), the wait
   * for the endpoints, and Envoy's drain time.
   */
  envoyAdminUrl: string;
  drainPort: number;
  drainWaitS: number;
  drainTimeS: number;
  /** Policy, the guard and the renderer: seconds a role keeps serving, unready, after SIGTERM (lib/admin.ts `drainAfterSignal`). */
  termDrainS: number;
  /** PostgreSQL connections policy keeps open at most. */
  pgPoolSize: number;
  /** Worker threads that draw Open Graph cards (spec 4.5; drawing blocks its thread). */
  ogThreads: number;
  /** Cards that may wait for a drawing thread; one more is answered 503 `busy`. */
  ogQueue: number;
  /** Namespace the operator watches; its own (podNamespace) when unset. */
  controllerNamespace: string | undefined;
  /** The operator's leader Lease (`tintype-controller` when unset); one per release in a chart. */
  controllerLease: string | undefined;
  /** The one RenderPool the operator reconciles; every pool of the namespace when unset. */
  controllerPool: string | undefined;
  /** How often the operator reads each renderer's `/state`. */
  controllerPollMs: number;
  /** The pod's own namespace and name (downward API): where the operator's Lease lives, and its holder. */
  podNamespace: string | undefined;
  podName: string | undefined;
  /** A kubeconfig file for the operator outside a cluster. */
  kubeconfig: string | undefined;
  /** Running inside a cluster (its service account credentials are there). */
  inCluster: boolean;
  otelEndpoint: string | undefined;
  otelServiceName: string | undefined;
  /**
   * OTLP export: headers sent with every export (OTEL_EXPORTER_OTLP_HEADERS, `k=v,…`, values
   * percent-decoded; never logged) and a PEM file of the CA the collector's certificate is checked
   * against (OTEL_EXPORTER_OTLP_CERTIFICATE; docs/operations.md "Telemetry").
   */
  otelHeaders: Readonly<Record<string, string>>;
  otelCaFile: string | undefined;
  logLevel: 'debug' | 'info' | 'warn' | 'error';
}

type Env = Record<string, string | undefined>;

/**
 * OTLP headers as the OpenTelemetry environment gives them: `key=value` pairs separated by commas,
 * values percent-encoded. A name that is not an HTTP token or a value with a control character is
 * refused; the message names the variable and the header, never a value.
 */
function otlpHeaders(env: Env, name: string): Record<string, string> {
  const v = raw(env, name);
  const out: Record<string, string> = {};
  if (v === undefined) return out;
  for (const pair of v.split(',')) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    const key = (eq < 0 ? pair : pair.slice(0, eq)).trim().toLowerCase();
    if (eq < 0 || !/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(key)) throw new ConfigError(`${name} must be key=value pairs separated by commas (header names are HTTP tokens)`);
    let value: string;
    try {
      value = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      throw new ConfigError(`${name}: the value of ${key} is not valid percent-encoding`);
    }
    if ([...value].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f)) throw new ConfigError(`${name}: the value of ${key} holds a control character`);
    out[key] = value;
  }
  return out;
}

function raw(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const v = raw(env, name);
  if (v === undefined) return fallback;
  if (!/^\d+$/.test(v)) throw new ConfigError(`${name} must be a whole number from ${min} to ${max}`);
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}`);
  }
  return n;
}

function optionalPort(env: Env, name: string): number | undefined {
  return raw(env, name) === undefined ? undefined : integer(env, name, 0, 0, 65535);
}

function url(env: Env, name: string, schemes: readonly string[]): string | undefined {
  const v = raw(env, name);
  if (v === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(v);
  } catch {
    throw new ConfigError(`${name} must be an absolute URL (${schemes.join(', ')})`);
  }
  if (!schemes.includes(parsed.protocol.replace(/:$/, ''))) {
    throw new ConfigError(`${name} must be an absolute URL (${schemes.join(', ')})`);
  }
  return v;
}

function list(env: Env, name: string): string[] {
  const v = raw(env, name);
  return v === undefined ? [] : v.split(',').map((s) => s.trim()).filter((s) => s !== '');
}

/**
 * Fewest different byte values among the 32 random bytes of a signing key's seed. Random bytes
 * show about 30 (a draw under 16 has odds below 2^-100); a key typed by hand, all one byte or a
 * short pattern repeated, shows a few, and anyone who guesses it mints leases.
 */
export const SIGNING_KEY_MIN_DISTINCT_BYTES = 16;

function signingKey(env: Env, name: string): KeyObject | undefined {
  const v = raw(env, name);
  if (v === undefined) return undefined;
  let key: KeyObject;
  try {
    key = parseLeasePrivateKey(v);
  } catch {
    throw new ConfigError(`${name} must be an Ed25519 private key: PEM, or the base64 of its PKCS#8 DER (tintype keys lease-keypair makes one)`);
  }
  if (new Set(leaseKeySeed(key)).size < SIGNING_KEY_MIN_DISTINCT_BYTES) {
    throw new ConfigError(`${name} is not random enough: its seed shows fewer than ${SIGNING_KEY_MIN_DISTINCT_BYTES} different bytes of 32; make one with tintype keys lease-keypair`);
  }
  return key;
}

function rendererToken(env: Env, name: string): string | undefined {
  const v = raw(env, name);
  if (v === undefined) return undefined;
  if (!RENDERER_TOKEN_FORM.test(v)) throw new ConfigError(`${name} must be 32 to 256 URL-safe characters (A-Z a-z 0-9 _ . ~ + / = -), random: for example 32 random bytes in base64`);
  return v;
}

function publicKeys(env: Env, name: string): KeyObject[] {
  return list(env, name).map((text) => {
    try {
      return parseLeasePublicKey(text);
    } catch {
      throw new ConfigError(`${name} must be comma-separated Ed25519 public keys: PEM, or the base64 of their SPKI DER (tintype keys lease-keypair makes a pair)`);
    }
  });
}

/** The render token key (lib/render-token.ts). */
function tokenKey(env: Env, name: string): RenderTokens | undefined {
  const v = raw(env, name);
  if (v === undefined) return undefined;
  const tokens = RenderTokens.fromKeyText(v);
  if (tokens === undefined) {
    throw new ConfigError(`${name} must be the base64 of at least ${TOKEN_KEY_MIN_BYTES} random bytes (openssl rand -base64 32 makes one), the same on the guard and every renderer`);
  }
  return tokens;
}

/** An HMAC lease secret mints leases wherever it is: renderers now hold public keys only. */
function noLeaseSecret(env: Env): void {
  if (raw(env, 'TINTYPE_LEASE_SECRET') !== undefined) {
    throw new ConfigError('TINTYPE_LEASE_SECRET is no longer read: set TINTYPE_LEASE_SIGNING_KEY on policy and TINTYPE_LEASE_PUBLIC_KEYS on policy and every renderer (tintype keys lease-keypair makes a pair)');
  }
}

function oneOf<T extends string>(env: Env, name: string, allowed: readonly T[], fallback: T): T {
  const v = raw(env, name);
  if (v === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(v)) throw new ConfigError(`${name} must be one of ${allowed.join(', ')}`);
  return v as T;
}

/** A Kubernetes namespace or object name (an RFC 1123 label). */
function dnsLabel(env: Env, name: string): string | undefined {
  const v = raw(env, name);
  if (v !== undefined && !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(v)) {
    throw new ConfigError(`${name} must be a Kubernetes name (lower-case letters, digits and '-', at most 63)`);
  }
  return v;
}

/**
 * TINTYPE_COUNTERS_URL, which means nothing without DATABASE_URL (keys and the ledger stay in
 * PostgreSQL): one server, Sentinel or Cluster (lib/redis-connect.ts).
 */
function countersUrl(env: Env): string | undefined {
  const v = raw(env, 'TINTYPE_COUNTERS_URL');
  if (v === undefined) return undefined;
  try {
    parseRedisUrl(v);
  } catch (err) {
    // Which part is wrong, never the value: it may hold a password.
    throw new ConfigError(`TINTYPE_COUNTERS_URL has ${(err as Error).message}: it must be one of ${REDIS_URL_FORMS}`);
  }
  if (raw(env, 'DATABASE_URL') === undefined) {
    throw new ConfigError('TINTYPE_COUNTERS_URL needs DATABASE_URL: keys, plans and the ledger stay in PostgreSQL');
  }
  return v;
}

/** Parses the environment into a frozen Config, or throws a ConfigError naming the variable. */
export function loadConfig(env: Env = process.env): Readonly<Config> {
  noLeaseSecret(env);
  const renderTimeoutMs = integer(env, 'TINTYPE_RENDER_TIMEOUT_MS', DEFAULT_RENDER_TIMEOUT_MS, 1_000, 600_000);
  const config: Config = {
    port: optionalPort(env, 'PORT'),
    adminPort: optionalPort(env, 'TINTYPE_ADMIN_PORT'),
    dataDir: path.resolve(raw(env, 'TINTYPE_DATA_DIR') ?? './data'),
    databaseUrl: url(env, 'DATABASE_URL', ['postgres', 'postgresql']),
    redisUrl: url(env, 'REDIS_URL', ['redis', 'rediss']),
    countersUrl: countersUrl(env),
    plansFile: raw(env, 'TINTYPE_PLANS'),
    chromiumPath: raw(env, 'CHROMIUM_PATH'),
    browserSocket: raw(env, 'TINTYPE_BROWSER_SOCKET'),
    chromiumUid: integer(env, 'TINTYPE_CHROMIUM_UID', DEFAULT_CHROMIUM_UID, 1, 4_294_967_294),
    slots: integer(env, 'TINTYPE_SLOTS', DEFAULT_SLOTS, 1, MAX_SLOTS),
    renderTimeoutMs,
    maxOutputBytes: integer(env, 'TINTYPE_MAX_OUTPUT_BYTES', 26_214_400, 1_024, 1_073_741_824),
    recycleAfterRenders: integer(env, 'TINTYPE_RECYCLE_AFTER_RENDERS', 500, 1, 1_000_000),
    browserMaxRssMb: integer(env, 'TINTYPE_BROWSER_MAX_RSS_MB', 1_024, 64, 65_536),
    cacheMaxBytes: integer(env, 'TINTYPE_CACHE_MAX_BYTES', 1_073_741_824, 0, Number.MAX_SAFE_INTEGER),
    isolation: oneOf(env, 'TINTYPE_ISOLATION', ['netns', 'pod'] as const, 'netns'),
    guardUrl: url(env, 'GUARD_URL', ['http']),
    guardSocket: raw(env, 'GUARD_SOCKET'),
    guardDnsServers: list(env, 'GUARD_DNS_SERVERS'),
    guardAllowCidrs: list(env, 'GUARD_ALLOW_CIDRS'),
    guardSelfAddresses: list(env, 'GUARD_SELF_ADDRESSES'),
    guardConnectTimeoutMs: integer(env, 'GUARD_CONNECT_TIMEOUT_MS', 10_000, 100, 600_000),
    guardIdleTimeoutMs: integer(env, 'GUARD_IDLE_TIMEOUT_MS', 60_000, 100, 3_600_000),
    guardDnsTimeoutMs: integer(env, 'GUARD_DNS_TIMEOUT_MS', 5_000, 100, 60_000),
    guardMaxTunnels: integer(env, 'GUARD_MAX_TUNNELS', 512, 1, 1_000_000),
    guardMaxTunnelsPerRender: integer(env, 'GUARD_MAX_TUNNELS_PER_RENDER', DEFAULT_TUNNELS_PER_RENDER, 1, 100_000),
    guardMaxUnnamedTunnels: integer(env, 'GUARD_MAX_UNNAMED_TUNNELS', GUARD_BOUND_DEFAULTS.maxUnnamedTunnels, 0, 100_000),
    guardMaxConnections: integer(env, 'GUARD_MAX_CONNECTIONS', GUARD_BOUND_DEFAULTS.maxConnections, 1, 1_000_000),
    guardMaxConnectionsPerPeer: integer(env, 'GUARD_MAX_CONNECTIONS_PER_PEER', GUARD_BOUND_DEFAULTS.maxConnectionsPerPeer, 1, 1_000_000),
    guardHeadersTimeoutMs: integer(env, 'GUARD_HEADERS_TIMEOUT_MS', GUARD_BOUND_DEFAULTS.headersTimeoutMs, 100, 120_000),
    guardRequestTimeoutMs: integer(env, 'GUARD_REQUEST_TIMEOUT_MS', GUARD_BOUND_DEFAULTS.requestTimeoutMs, 100, 600_000),
    guardTokens: tokenKey(env, 'GUARD_TOKEN_KEY'),
    policyUrl: url(env, 'TINTYPE_POLICY_URL', ['http', 'https']),
    policySettlePort: optionalPort(env, 'TINTYPE_POLICY_SETTLE_PORT'),
    policyUsageOpen: oneOf(env, 'TINTYPE_POLICY_USAGE_OPEN', ['true', 'false'] as const, 'false') === 'true',
    rendererToken: rendererToken(env, 'TINTYPE_RENDERER_TOKEN'),
    policyMaxConnections: integer(env, 'TINTYPE_POLICY_MAX_CONNECTIONS', DEFAULT_POLICY_MAX_CONNECTIONS, 4, 1_000_000),
    leaseGraceMs: integer(env, 'TINTYPE_LEASE_GRACE_MS', 15_000, 0, 600_000),
    egressAuditDays: integer(env, 'TINTYPE_EGRESS_AUDIT_DAYS', 30, 1, 3_650),
    ledgerMonths: raw(env, 'TINTYPE_LEDGER_MONTHS') === undefined ? undefined : integer(env, 'TINTYPE_LEDGER_MONTHS', 0, 1, 1_200),
    leaseSigningKey: signingKey(env, 'TINTYPE_LEASE_SIGNING_KEY'),
    leasePublicKeys: Object.freeze(publicKeys(env, 'TINTYPE_LEASE_PUBLIC_KEYS')),
    edgeMaxConnections: integer(env, 'TINTYPE_EDGE_MAX_CONNECTIONS', 1_024, 1, 1_000_000),
    sqliteSync: oneOf(env, 'TINTYPE_SQLITE_SYNC', ['normal', 'full'] as const, 'normal'),
    migrate: oneOf(env, 'TINTYPE_MIGRATE', ['start', 'wait'] as const, 'start'),
    envoyAdminUrl: url(env, 'TINTYPE_ENVOY_ADMIN_URL', ['http']) ?? 'http://127.0.0.1:9901',
    drainPort: integer(env, 'TINTYPE_DRAIN_PORT', 9903, 1, 65_535),
    drainWaitS: integer(env, 'TINTYPE_DRAIN_WAIT_S', 15, 0, 300),
    drainTimeS: integer(env, 'TINTYPE_DRAIN_TIME_S', 45, 1, 3_600),
    termDrainS: integer(env, 'TINTYPE_TERM_DRAIN_S', 0, 0, 300),
    pgPoolSize: integer(env, 'TINTYPE_PG_POOL', 10, 1, 200),
    ogThreads: integer(env, 'TINTYPE_OG_THREADS', 2, 1, 64),
    ogQueue: integer(env, 'TINTYPE_OG_QUEUE', 64, 0, 100_000),
    controllerNamespace: dnsLabel(env, 'TINTYPE_CONTROLLER_NAMESPACE'),
    controllerLease: dnsLabel(env, 'TINTYPE_CONTROLLER_LEASE'),
    controllerPool: dnsLabel(env, 'TINTYPE_CONTROLLER_POOL'),
    controllerPollMs: integer(env, 'TINTYPE_CONTROLLER_POLL_MS', 5_000, 100, 600_000),
    podNamespace: dnsLabel(env, 'POD_NAMESPACE'),
    podName: raw(env, 'POD_NAME'),
    kubeconfig: raw(env, 'KUBECONFIG'),
    inCluster: raw(env, 'KUBERNETES_SERVICE_HOST') !== undefined,
    otelEndpoint: url(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', ['http', 'https']) ??
      url(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', ['http', 'https']),
    otelServiceName: raw(env, 'OTEL_SERVICE_NAME'),
    otelHeaders: Object.freeze(otlpHeaders(env, 'OTEL_EXPORTER_OTLP_HEADERS')),
    otelCaFile: raw(env, 'OTEL_EXPORTER_OTLP_CERTIFICATE'),
    logLevel: oneOf(env, 'TINTYPE_LOG_LEVEL', ['debug', 'info', 'warn', 'error'] as const, 'info'),
  };
  return Object.freeze(config);
}

/** Policy's signing key; without it policy cannot grant a lease. */
export function requireLeaseSigningKey(config: Readonly<Config>): KeyObject {
  if (config.leaseSigningKey === undefined) {
    throw new ConfigError('TINTYPE_LEASE_SIGNING_KEY must be set on policy: an Ed25519 private key (tintype keys lease-keypair makes a pair)');
  }
  return config.leaseSigningKey;
}

/**
 * The render token key of a guard on its own, or of a renderer using it (GUARD_URL): without it the
 * guard could name no render, and a renderer make no name it accepts.
 */
export function requireGuardTokens(config: Pick<Config, 'guardTokens'>, who: string): RenderTokens {
  if (config.guardTokens === undefined) {
    throw new ConfigError(`GUARD_TOKEN_KEY must be set on ${who}: the base64 of at least ${TOKEN_KEY_MIN_BYTES} random bytes (openssl rand -base64 32 makes one), the same on the guard and every renderer`);
  }
  return config.guardTokens;
}

/** The renderer token policy checks on its renderer listener; without it policy would take anyone's claims. */
export function requireRendererToken(config: Readonly<Config>): string {
  if (config.rendererToken === undefined) {
    throw new ConfigError('TINTYPE_RENDERER_TOKEN must be set on policy and on every renderer: 32 to 256 URL-safe characters, random (for example 32 random bytes in base64), the same on both');
  }
  return config.rendererToken;
}

/** The public keys a standalone renderer checks leases with; without them it cannot check one. */
export function requireLeasePublicKeys(config: Readonly<Config>): readonly KeyObject[] {
  if (config.leasePublicKeys.length === 0) {
    throw new ConfigError('TINTYPE_LEASE_PUBLIC_KEYS must be set on every renderer: comma-separated Ed25519 public keys, the public half of policy\'s TINTYPE_LEASE_SIGNING_KEY among them');
  }
  return config.leasePublicKeys;
}
