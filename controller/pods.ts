/**
 * Which pods belong to a RenderPool and where their `/state` is: the Deployment's spec.selector
 * picks them; a Running pod with a Ready condition, its status.podIP and its container port
 * named `admin` make it readable. How many slots it has is read from its spec, not its word.
 */
import { DEFAULT_SLOTS, MAX_SLOTS } from '../lib/config.ts';

/** True when `labels` satisfy a LabelSelector (matchLabels and matchExpressions). An empty selector matches nothing here. */
export function selectorMatches(selector: any, labels: Record<string, string> = {}): boolean {
  const matchLabels: Record<string, string> = selector?.matchLabels ?? {};
  const expressions: any[] = selector?.matchExpressions ?? [];
  if (Object.keys(matchLabels).length === 0 && expressions.length === 0) return false;
  for (const [k, v] of Object.entries(matchLabels)) if (labels[k] !== v) return false;
  for (const e of expressions) {
    const has = Object.hasOwn(labels, e.key);
    const values: string[] = e.values ?? [];
    switch (e.operator) {
      case 'In': if (!has || !values.includes(labels[e.key]!)) return false; break;
      case 'NotIn': if (has && values.includes(labels[e.key]!)) return false; break;
      case 'Exists': if (!has) return false; break;
      case 'DoesNotExist': if (has) return false; break;
      default: return false;
    }
  }
  return true;
}

/** A pod whose `/state` may be read. */
export interface ReadyPod {
  name: string;
  /** `http://ip:port` of its admin port. */
  adminBase: string;
  /** What configuredSlots() reads from its spec. */
  configuredSlots: number | undefined;
}

/**
 * The slots a pod spec configures: the `TINTYPE_SLOTS` its containers set (the renderer's default
 * when none does); undefined when it is set from elsewhere (`valueFrom`) or out of the renderer's
 * bounds, since the spec then does not say.
 */
export function configuredSlots(podSpec: any): number | undefined {
  const set = (podSpec?.containers ?? []).flatMap((c: any) => (c.env ?? []).filter((e: any) => e?.name === 'TINTYPE_SLOTS'));
  if (set.length === 0) return DEFAULT_SLOTS;
  const value: unknown = set.at(-1).value;
  if (typeof value !== 'string' || !/^\d+$/.test(value.trim())) return undefined;
  const n = Number(value);
  return n >= 1 && n <= MAX_SLOTS ? n : undefined;
}

/** The pod's admin endpoint when it is Running and Ready and not being deleted; otherwise undefined. */
export function readyPod(pod: any): ReadyPod | undefined {
  if (pod?.status?.phase !== 'Running' || pod.metadata?.deletionTimestamp) return undefined;
  const ready = (pod.status.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True');
  const ip: unknown = pod.status.podIP;
  if (!ready || typeof ip !== 'string' || ip === '') return undefined;
  let port: number | undefined;
  for (const c of pod.spec?.containers ?? []) {
    for (const p of c.ports ?? []) if (p.name === 'admin' && Number.isInteger(p.containerPort)) port = p.containerPort;
  }
  if (port === undefined) return undefined;
  const host = ip.includes(':') ? `[${ip}]` : ip;
  return { name: pod.metadata.name, adminBase: `http://${host}:${port}`, configuredSlots: configuredSlots(pod.spec) };
}
