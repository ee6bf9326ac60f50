/**
 * Plans: the limits a key is held to (docs/operations.md "Plans"; spec Part 8 "Monthly quota", "Per-key burst
 * limit", "Concurrent renders per key"). Built in, overridable by a JSON file named in
 * TINTYPE_PLANS; a bad file stops start-up with a message naming the field.
 */
import { readFileSync } from 'node:fs';
import { ConfigError } from '../lib/config.ts';

/** The limits of one plan. */
export interface Plan {
  /** Calls per UTC calendar month (spec Part 8 "Monthly quota"). */
  monthlyQuota: number;
  /** Requests per fixed 60-second window (spec Part 8 "Per-key burst limit"). */
  perMinute: number;
  /** Render operations in flight at once (spec Part 8 "Concurrent renders per key"). */
  concurrentRenders: number;
}

export type Plans = Readonly<Record<string, Readonly<Plan>>>;

/** docs/operations.md "Plans". */
export const BUILT_IN_PLANS: Plans = Object.freeze({
  free: Object.freeze({ monthlyQuota: 100, perMinute: 60, concurrentRenders: 1 }),
  starter: Object.freeze({ monthlyQuota: 2_000, perMinute: 120, concurrentRenders: 2 }),
  pro: Object.freeze({ monthlyQuota: 10_000, perMinute: 180, concurrentRenders: 2 }),
  scale: Object.freeze({ monthlyQuota: 30_000, perMinute: 240, concurrentRenders: 2 }),
});

export const PLAN_NAME = /^[a-z][a-z0-9_-]{0,31}$/;

const FIELDS: Record<keyof Plan, [min: number, max: number]> = {
  monthlyQuota: [0, 1_000_000_000],
  perMinute: [1, 1_000_000],
  concurrentRenders: [1, 10_000],
};

/**
 * Parses a plans document: `{"plans": {"<name>": {"monthlyQuota": n, "perMinute": n,
 * "concurrentRenders": n}}}`. Each named plan replaces or adds to the built-in ones; plans not
 * named keep their built-in limits. Throws a ConfigError naming the field at fault.
 */
export function parsePlans(text: string, source = 'TINTYPE_PLANS'): Plans {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`${source}: not valid JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  if (!isObject(doc)) throw new ConfigError(`${source}: the document must be a JSON object with a "plans" object`);
  for (const k of Object.keys(doc)) {
    if (k !== 'plans') throw new ConfigError(`${source}: unknown field "${k}" (only "plans" is allowed)`);
  }
  const plans = doc.plans;
  if (!isObject(plans)) throw new ConfigError(`${source}: field "plans" must be an object of plan name to limits`);
  const out: Record<string, Readonly<Plan>> = { ...BUILT_IN_PLANS };
  for (const [name, value] of Object.entries(plans)) {
    const where = `plans.${name}`;
    if (!PLAN_NAME.test(name)) throw new ConfigError(`${source}: ${where}: a plan name is 1 to 32 of a-z, 0-9, _ and -, starting with a letter`);
    if (!isObject(value)) throw new ConfigError(`${source}: ${where} must be an object with monthlyQuota, perMinute, concurrentRenders`);
    for (const k of Object.keys(value)) {
      if (!(k in FIELDS)) throw new ConfigError(`${source}: ${where}.${k} is not a plan field (monthlyQuota, perMinute, concurrentRenders)`);
    }
    const plan = {} as Plan;
    for (const [field, [min, max]] of Object.entries(FIELDS) as Array<[keyof Plan, [number, number]]>) {
      const v = value[field];
      if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) {
        throw new ConfigError(`${source}: ${where}.${field} must be a whole number from ${min} to ${max}`);
      }
      plan[field] = v;
    }
    out[name] = Object.freeze(plan);
  }
  return Object.freeze(out);
}

/** The plans in force: built-in, or built-in overridden by the file at `file`. */
export function loadPlans(file: string | undefined): Plans {
  if (file === undefined) return BUILT_IN_PLANS;
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`TINTYPE_PLANS: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  return parsePlans(text);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
