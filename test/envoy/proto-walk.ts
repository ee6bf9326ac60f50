/**
 * Envoy cannot run here, so what it would say about its configuration is said by walking the
 * configuration against Envoy's own v3 API: the `.proto` files with their `validate` rules that
 * `@grpc/grpc-js-xds` ships, read by protobufjs. A value is read as Envoy reads YAML (the proto3
 * JSON mapping: proto or lowerCamel field names, durations as "1.5s", wrappers as bare values,
 * `@type` for Any) and every problem Envoy would refuse the config for is one issue, named by
 * its path: an unknown field, a wrong type, an enum value that does not exist, two members of
 * one oneof, a broken validate rule, an `@type` that names no message. Beyond what Envoy refuses,
 * a deprecated field or enum value is an issue too (it stops working in a later Envoy), and so
 * is a validate rule this walker cannot check (nothing passes unchecked).
 */
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

/** One thing Envoy would refuse (or a later Envoy would), at a path such as `static_resources.clusters[0].name`. */
export interface WalkIssue {
  path: string;
  problem: string;
}

const DEPS = fileURLToPath(new URL('../../node_modules/@grpc/grpc-js-xds/deps/', import.meta.url));
const PROTOBUFJS = fileURLToPath(new URL('../../node_modules/protobufjs/', import.meta.url));
const INCLUDE = [join(DEPS, 'envoy-api'), join(DEPS, 'xds'), join(DEPS, 'googleapis'), join(DEPS, 'protoc-gen-validate'), PROTOBUFJS];
/** Bundled with protobufjs itself (protobuf.common), so never read from disk. */
const COMMON = new Set(['any', 'duration', 'empty', 'field_mask', 'struct', 'timestamp', 'wrappers'].map((n) => `google/protobuf/${n}.proto`));

function findProto(target: string): string | undefined {
  if (COMMON.has(target)) return target;
  for (const dir of INCLUDE) {
    const p = join(dir, target);
    if (existsSync(p)) return p;
  }
  return undefined;
}

/**
 * Every Envoy API file whose imports are all shipped. A few files (v2 leftovers, the OpenCensus
 * tracer) import protos the package leaves out; their messages then do not exist for the walk,
 * so a config naming one of them gets "names no message", which is what we want for them.
 */
function loadableFiles(): string[] {
  const base = join(DEPS, 'envoy-api');
  const all: string[] = [];
  const list = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) list(p);
      else if (name.endsWith('.proto')) all.push(relative(base, p));
    }
  };
  list(join(base, 'envoy'));
  const known = new Map<string, boolean>();
  const loadable = (file: string, seen: Set<string>): boolean => {
    const k = known.get(file);
    if (k !== undefined) return k;
    if (seen.has(file)) return true;
    seen.add(file);
    const p = findProto(file);
    let ok = p !== undefined;
    if (p !== undefined && !COMMON.has(file)) {
      const imports = [...readFileSync(p, 'utf8').matchAll(/^import\s+(?:public\s+|weak\s+)?"([^"]+)"/gm)].map((m) => m[1]!);
      ok = imports.every((i) => loadable(i, seen));
    }
    known.set(file, ok);
    return ok;
  };
  return all.filter((f) => loadable(f, new Set()));
}

let loaded: protobuf.Root | undefined;

/** Envoy's v3 API, loaded once per process (a few seconds). */
export function envoyApi(): protobuf.Root {
  if (loaded !== undefined) return loaded;
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => findProto(target) ?? target;
  root.loadSync(loadableFiles(), { keepCase: true });
  root.resolveAll();
  loaded = root;
  return root;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Rules = Record<string, any>;

const WRAPPERS: Record<string, string> = {
  'google.protobuf.DoubleValue': 'double',
  'google.protobuf.FloatValue': 'float',
  'google.protobuf.Int64Value': 'int64',
  'google.protobuf.UInt64Value': 'uint64',
  'google.protobuf.Int32Value': 'int32',
  'google.protobuf.UInt32Value': 'uint32',
  'google.protobuf.BoolValue': 'bool',
  'google.protobuf.StringValue': 'string',
  'google.protobuf.BytesValue': 'bytes',
};
const INT32 = new Set(['int32', 'sint32', 'sfixed32']);
const UINT32 = new Set(['uint32', 'fixed32']);
const INT64 = new Set(['int64', 'sint64', 'sfixed64']);
const UINT64 = new Set(['uint64', 'fixed64']);
const NUMERIC = new Set([...INT32, ...UINT32, ...INT64, ...UINT64, 'double', 'float']);
/** A proto3 JSON Duration: seconds with up to nine decimals and an `s`. */
const DURATION = /^-?\d+(\.\d{1,9})?s$/;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$/;
const TYPE_URL = /^(?:[^/]+\/)+([A-Za-z_][\w.]*)$/;

const kindOf = (v: Json): string => (v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v === 'object' ? 'an object' : `a ${typeof v}`);
const isObject = (v: Json): v is { [k: string]: Json } => v !== null && typeof v === 'object' && !Array.isArray(v);
const camel = (name: string): string => name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

/** Duration (proto3 JSON string, or the `{seconds, nanos}` of an option value) in nanoseconds. */
function durationNanos(v: unknown): bigint | undefined {
  if (typeof v === 'string') {
    if (!DURATION.test(v)) return undefined;
    const neg = v.startsWith('-');
    const [s, frac = ''] = v.replace(/^-|s$/g, '').split('.');
    const n = BigInt(s!) * 1_000_000_000n + BigInt((frac + '000000000').slice(0, 9));
    return neg ? -n : n;
  }
  if (v !== null && typeof v === 'object') {
    const o = v as { seconds?: number | string; nanos?: number };
    return BigInt(o.seconds ?? 0) * 1_000_000_000n + BigInt(o.nanos ?? 0);
  }
  return undefined;
}

/** A JSON number or numeric string as a bigint (integers) or number (floats), or undefined. */
function numeric(type: string, v: Json): number | bigint | undefined {
  if (type === 'double' || type === 'float') {
    if (typeof v === 'number') return v;
    if (typeof v === 'string' && (['NaN', 'Infinity', '-Infinity'].includes(v) || /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(v))) return Number(v);
    return undefined;
  }
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v);
  return undefined;
}

function inRange(type: string, n: bigint): boolean {
  if (INT32.has(type)) return n >= -(2n ** 31n) && n < 2n ** 31n;
  if (UINT32.has(type)) return n >= 0n && n < 2n ** 32n;
  if (INT64.has(type)) return n >= -(2n ** 63n) && n < 2n ** 63n;
  return n >= 0n && n < 2n ** 64n;
}

/** The merged `(validate.rules)` of a field, or undefined. */
function rulesOf(field: protobuf.Field): Rules | undefined {
  const parsed = (field as unknown as { parsedOptions?: Record<string, unknown>[] }).parsedOptions;
  if (parsed === undefined || parsed === null) return undefined;
  let out: Rules | undefined;
  const merge = (into: Rules, from: Rules): void => {
    for (const [k, v] of Object.entries(from)) {
      if (v !== null && typeof v === 'object' && !Array.isArray(v) && typeof into[k] === 'object') merge(into[k], v as Rules);
      else into[k] = v;
    }
  };
  for (const o of parsed) {
    const r = o['(validate.rules)'];
    if (r !== undefined) {
      out ??= {};
      merge(out, r as Rules);
    }
  }
  return out;
}

const deprecatedNote = (options: Record<string, unknown> | undefined): string | undefined => {
  if (options === undefined) return undefined;
  const since = options['(envoy.annotations.deprecated_at_minor_version)'] ?? options['(envoy.annotations.deprecated_at_minor_version_enum)'];
  if (options['deprecated'] === true || since !== undefined) return since === undefined ? 'deprecated' : `deprecated since API ${String(since)}`;
  return undefined;
};

/** Checks PGV comparison rules (`const`, `lt`, `lte`, `gt`, `gte`, `in`, `not_in`) on a comparable value. */
function compare<T extends number | bigint>(r: Rules, v: T, conv: (x: unknown) => T, show: (x: unknown) => string): string[] {
  const out: string[] = [];
  const lo = r['gt'] !== undefined ? { v: conv(r['gt']), incl: false } : r['gte'] !== undefined ? { v: conv(r['gte']), incl: true } : undefined;
  const hi = r['lt'] !== undefined ? { v: conv(r['lt']), incl: false } : r['lte'] !== undefined ? { v: conv(r['lte']), incl: true } : undefined;
  const above = (b: { v: T; incl: boolean }): boolean => (b.incl ? v >= b.v : v > b.v);
  const below = (b: { v: T; incl: boolean }): boolean => (b.incl ? v <= b.v : v < b.v);
  const ops = (b: { incl: boolean }, g: boolean): string => (g ? (b.incl ? '>=' : '>') : b.incl ? '<=' : '<');
  if (lo !== undefined && hi !== undefined && hi.v < lo.v) {
    // PGV: lt < gt means "outside the range".
    if (!(above(lo) || below(hi))) out.push(`must be ${ops(hi, false)} ${show(hi.v)} or ${ops(lo, true)} ${show(lo.v)}`);
  } else {
    if (lo !== undefined && !above(lo)) out.push(`must be ${ops(lo, true)} ${show(lo.v)}`);
    if (hi !== undefined && !below(hi)) out.push(`must be ${ops(hi, false)} ${show(hi.v)}`);
  }
  if (r['const'] !== undefined && v !== conv(r['const'])) out.push(`must be ${show(r['const'])}`);
  if (Array.isArray(r['in']) && !r['in'].map(conv).includes(v)) out.push(`must be one of ${r['in'].map(show).join(', ')}`);
  if (Array.isArray(r['not_in']) && r['not_in'].map(conv).includes(v)) out.push(`must not be ${show(v)}`);
  return out;
}
const COMPARE_KEYS = new Set(['const', 'lt', 'lte', 'gt', 'gte', 'in', 'not_in', 'ignore_empty']);

// PGV's well-known header regexes (validate.proto, KnownRegex).
const HEADER_NAME_STRICT = /^:?[0-9a-zA-Z!#$%&'*+\-.^_|~`]+$/;
const HEADER_VALUE_STRICT = /^[^\u0000-\u0008\u000A-\u001F\u007F]*$/;
const HEADER_LOOSE = /^[^\u0000\u000A\u000D]*$/;

function stringRules(r: Rules, v: string): string[] {
  const out: string[] = [];
  const chars = [...v].length;
  const bytes = Buffer.byteLength(v);
  for (const [k, x] of Object.entries(r)) {
    switch (k) {
      case 'min_len': if (chars < Number(x)) out.push(`must be at least ${x} characters`); break;
      case 'max_len': if (chars > Number(x)) out.push(`must be at most ${x} characters`); break;
      case 'len': if (chars !== Number(x)) out.push(`must be ${x} characters`); break;
      case 'min_bytes': if (bytes < Number(x)) out.push(`must be at least ${x} bytes`); break;
      case 'max_bytes': if (bytes > Number(x)) out.push(`must be at most ${x} bytes`); break;
      case 'len_bytes': if (bytes !== Number(x)) out.push(`must be ${x} bytes`); break;
      case 'const': if (v !== x) out.push(`must be ${JSON.stringify(x)}`); break;
      case 'prefix': if (!v.startsWith(String(x))) out.push(`must start with ${JSON.stringify(x)}`); break;
      case 'suffix': if (!v.endsWith(String(x))) out.push(`must end with ${JSON.stringify(x)}`); break;
      case 'contains': if (!v.includes(String(x))) out.push(`must contain ${JSON.stringify(x)}`); break;
      case 'not_contains': if (v.includes(String(x))) out.push(`must not contain ${JSON.stringify(x)}`); break;
      case 'in': if (!(x as string[]).includes(v)) out.push(`must be one of ${(x as string[]).join(', ')}`); break;
      case 'not_in': if ((x as string[]).includes(v)) out.push(`must not be ${JSON.stringify(v)}`); break;
      case 'pattern': if (!new RegExp(String(x), 'u').test(v)) out.push(`must match ${String(x)}`); break;
      case 'ip': if (isIP(v) === 0) out.push('must be an IP address'); break;
      case 'ipv4': if (isIP(v) !== 4) out.push('must be an IPv4 address'); break;
      case 'ipv6': if (isIP(v) !== 6) out.push('must be an IPv6 address'); break;
      case 'uri': if (!URL.canParse(v)) out.push('must be an absolute URI'); break;
      case 'strict': case 'ignore_empty': break;
      case 'well_known_regex': {
        const strict = r['strict'] !== false;
        const re = x === 'HTTP_HEADER_NAME' ? (strict ? HEADER_NAME_STRICT : HEADER_LOOSE)
          : x === 'HTTP_HEADER_VALUE' ? (strict ? HEADER_VALUE_STRICT : HEADER_LOOSE) : undefined;
        if (re === undefined) out.push(`rule string.well_known_regex ${String(x)} is not checked by this walker`);
        else if (!re.test(v)) out.push(`must be a valid ${String(x)}`);
        break;
      }
      default: out.push(`rule string.${k} is not checked by this walker`);
    }
  }
  return r['ignore_empty'] === true && v === '' ? [] : out;
}

/** Walks JSON values against the Envoy API. */
class Walker {
  readonly issues: WalkIssue[] = [];
  /** Every `cluster` a value names (route, HTTP URI, gRPC service), with its path. */
  readonly clusterRefs: { path: string; name: string }[] = [];

  constructor(private readonly root: protobuf.Root) {}

  private issue(path: string, problem: string): void {
    this.issues.push({ path: path === '' ? '(root)' : path, problem });
  }

  message(v: Json, type: protobuf.Type, path: string): void {
    const special = this.wellKnown(v, type, path);
    if (special) return;
    if (!isObject(v)) return this.issue(path, `must be an object (${type.name}), not ${kindOf(v)}`);
    const byName = new Map<string, protobuf.Field>();
    for (const f of type.fieldsArray) {
      byName.set(f.name, f);
      byName.set(camel(f.name), f);
    }
    const present = new Map<string, Json>();
    for (const [key, value] of Object.entries(v)) {
      const at = path === '' ? key : `${path}.${key}`;
      const field = byName.get(key);
      if (field === undefined) {
        this.issue(at, `unknown field of ${type.fullName.slice(1)}`);
        continue;
      }
      if (present.has(field.name)) this.issue(at, `${field.name} given twice`);
      present.set(field.name, value);
      const dep = deprecatedNote(field.options);
      if (dep !== undefined) this.issue(at, `${dep}: ${type.fullName.slice(1)}.${field.name}`);
      if (value === null) {
        this.issue(at, 'has no value');
        continue;
      }
      this.field(value, field, at);
    }
    for (const oneof of type.oneofsArray) {
      const set = oneof.fieldsArray.filter((f) => present.has(f.name));
      if (set.length > 1) this.issue(path, `oneof ${oneof.name} takes one of its members, not ${set.map((f) => f.name).join(' and ')}`);
      if (set.length === 0 && oneof.options?.['(validate.required)'] === true) {
        this.issue(path, `one of ${oneof.fieldsArray.map((f) => f.name).join(', ')} is required (oneof ${oneof.name})`);
      }
    }
    // Rules on fields left out: proto3 scalars are validated at their default value, messages only for `required`.
    for (const f of type.fieldsArray) {
      if (present.has(f.name) || f.partOf !== null) continue;
      const rules = rulesOf(f);
      if (rules === undefined) continue;
      const at = path === '' ? f.name : `${path}.${f.name}`;
      if (rules['message']?.required === true || rules['duration']?.required === true || rules['any']?.required === true || rules['timestamp']?.required === true) {
        this.issue(at, `required field missing (${type.fullName.slice(1)}.${f.name})`);
      } else if (f.repeated || f.map) {
        const r = (f.map ? rules['map'] : rules['repeated']) as Rules | undefined;
        const min = r?.['min_items'] ?? r?.['min_pairs'];
        if (min !== undefined && Number(min) > 0) this.issue(at, `required: at least ${min} ${f.map ? 'entries' : 'items'}`);
      } else if (f.resolvedType === null && rules['string'] !== undefined) {
        for (const p of stringRules(rules['string'] as Rules, '')) this.issue(at, `missing: ${p}`);
      } else if (f.resolvedType === null && NUMERIC.has(f.type) && rules[f.type] !== undefined) {
        this.scalarRules(f.type, 0, rules[f.type] as Rules, at, 'missing: ');
      }
    }
  }

  private field(v: Json, f: protobuf.Field, path: string): void {
    const rules = rulesOf(f);
    if (f.map) {
      if (!isObject(v)) return this.issue(path, `must be a map, not ${kindOf(v)}`);
      const mr = rules?.['map'] as Rules | undefined;
      const n = Object.keys(v).length;
      if (mr !== undefined) {
        for (const [k, x] of Object.entries(mr)) {
          if (k === 'min_pairs' && n < Number(x)) this.issue(path, `must have at least ${x} entries`);
          else if (k === 'max_pairs' && n > Number(x)) this.issue(path, `must have at most ${x} entries`);
          else if (k === 'keys' || k === 'values') continue;
          else if (!['min_pairs', 'max_pairs', 'no_sparse', 'ignore_empty'].includes(k)) this.issue(path, `rule map.${k} is not checked by this walker`);
        }
      }
      const keyType = (f as unknown as protobuf.MapField).keyType;
      for (const [k, x] of Object.entries(v)) {
        if (keyType !== 'string' && numeric(keyType, k) === undefined && !(keyType === 'bool' && (k === 'true' || k === 'false'))) this.issue(`${path}.${k}`, `map key must be ${keyType}`);
        if (mr?.['keys'] !== undefined && keyType === 'string') for (const p of this.rulesFor('string', k, mr['keys'] as Rules)) this.issue(`${path}.${k}`, `key ${p}`);
        this.single(x, f, `${path}.${k}`, mr?.['values'] as Rules | undefined);
      }
      return;
    }
    if (f.repeated) {
      if (!Array.isArray(v)) return this.issue(path, `must be a list, not ${kindOf(v)}`);
      const rr = rules?.['repeated'] as Rules | undefined;
      if (rr !== undefined) {
        for (const [k, x] of Object.entries(rr)) {
          if (k === 'min_items' && v.length < Number(x)) this.issue(path, `must have at least ${x} items`);
          else if (k === 'max_items' && v.length > Number(x)) this.issue(path, `must have at most ${x} items`);
          else if (k === 'unique' && x === true && new Set(v.map((i) => JSON.stringify(i))).size !== v.length) this.issue(path, 'items must be unique');
          else if (!['min_items', 'max_items', 'unique', 'items', 'ignore_empty'].includes(k)) this.issue(path, `rule repeated.${k} is not checked by this walker`);
        }
      }
      v.forEach((x, i) => this.single(x, f, `${path}[${i}]`, rr?.['items'] as Rules | undefined));
      return;
    }
    this.single(v, f, path, rules);
  }

  /** One value of a field (an item of a list or map, or the field itself) with its rules. */
  private single(v: Json, f: protobuf.Field, path: string, rules: Rules | undefined): void {
    if (v === null) return this.issue(path, 'has no value');
    const t = f.resolvedType;
    if (t instanceof protobuf.Type) {
      this.messageRules(v, t, rules, path);
      this.message(v, t, path);
      return;
    }
    if (t instanceof protobuf.Enum) return this.enumValue(v, t, path, rules?.['enum'] as Rules | undefined);
    this.scalar(v, f.type, path, rules);
    if (f.type === 'string' && typeof v === 'string' && ['cluster', 'cluster_name', 'cluster_names'].includes(f.name)) this.clusterRefs.push({ path, name: v });
  }

  private messageRules(v: Json, t: protobuf.Type, rules: Rules | undefined, path: string): void {
    if (rules === undefined) return;
    const name = t.fullName.slice(1);
    for (const [kind, r] of Object.entries(rules)) {
      if (kind === 'message') continue; // required: checked where absent; skip: nothing to do
      if (kind === 'duration' && name === 'google.protobuf.Duration') {
        const n = durationNanos(v);
        if (n === undefined) continue; // malformed: reported by the walk itself
        for (const k of Object.keys(r as Rules)) if (!COMPARE_KEYS.has(k) && k !== 'required') this.issue(path, `rule duration.${k} is not checked by this walker`);
        for (const p of compare(r as Rules, n, (x) => durationNanos(x) ?? 0n, (x) => (typeof x === 'bigint' ? `${Number(x) / 1e9}s` : `${Number(durationNanos(x) ?? 0n) / 1e9}s`))) this.issue(path, p);
        continue;
      }
      if (kind === 'any' && name === 'google.protobuf.Any') {
        const url = isObject(v) ? v['@type'] : undefined;
        const rr = r as Rules;
        if (Array.isArray(rr['in']) && !rr['in'].includes(url)) this.issue(path, `@type must be one of ${rr['in'].join(', ')}`);
        if (Array.isArray(rr['not_in']) && rr['not_in'].includes(url)) this.issue(path, `@type must not be ${String(url)}`);
        continue;
      }
      const wrapped = WRAPPERS[name];
      if (wrapped !== undefined && (kind === wrapped || (kind === 'string' && wrapped === 'string'))) {
        for (const p of this.rulesFor(wrapped, v, r as Rules)) this.issue(path, p);
        continue;
      }
      this.issue(path, `rule ${kind} on ${name} is not checked by this walker`);
    }
  }

  private rulesFor(type: string, v: Json, r: Rules): string[] {
    if (type === 'string' && typeof v === 'string') return stringRules(r, v);
    if (type === 'bool') return r['const'] !== undefined && v !== r['const'] ? [`must be ${String(r['const'])}`] : [];
    if (NUMERIC.has(type)) {
      const n = numeric(type, v);
      if (n === undefined) return [];
      const bad = Object.keys(r).filter((k) => !COMPARE_KEYS.has(k)).map((k) => `rule ${type}.${k} is not checked by this walker`);
      const conv = typeof n === 'bigint' ? (x: unknown): bigint => BigInt(x as number) : (x: unknown): number => Number(x);
      return [...bad, ...compare(r, n as never, conv as never, String)];
    }
    if (type === 'bytes') return Object.keys(r).length > 0 ? [`rule bytes on ${type} is not checked by this walker`] : [];
    return [];
  }

  private scalarRules(type: string, v: Json, r: Rules, path: string, prefix = ''): void {
    for (const p of this.rulesFor(type, v, r)) this.issue(path, prefix + p);
  }

  private scalar(v: Json, type: string, path: string, rules: Rules | undefined): void {
    if (type === 'string') {
      if (typeof v !== 'string') return this.issue(path, `must be a string, not ${kindOf(v)}`);
    } else if (type === 'bool') {
      if (typeof v !== 'boolean') return this.issue(path, `must be true or false, not ${kindOf(v)}`);
    } else if (type === 'bytes') {
      if (typeof v !== 'string' || !/^[A-Za-z0-9+/_-]*={0,2}$/.test(v)) return this.issue(path, 'must be base64 bytes');
    } else if (NUMERIC.has(type)) {
      const n = numeric(type, v);
      if (n === undefined) return this.issue(path, `must be ${type === 'double' || type === 'float' ? 'a number' : `a whole number (${type})`}, not ${JSON.stringify(v)}`);
      if (typeof n === 'bigint' && !inRange(type, n)) return this.issue(path, `${String(n)} is out of range for ${type}`);
    } else {
      return this.issue(path, `type ${type} is not known to this walker`);
    }
    const r = rules?.[type] as Rules | undefined;
    if (r !== undefined) this.scalarRules(type, v, r, path);
    const other = rules === undefined ? [] : Object.keys(rules).filter((k) => k !== type);
    for (const k of other) this.issue(path, `rule ${k} on a ${type} is not checked by this walker`);
  }

  private enumValue(v: Json, e: protobuf.Enum, path: string, rules: Rules | undefined): void {
    let name: string | undefined;
    if (typeof v === 'string') name = Object.hasOwn(e.values, v) ? v : undefined;
    else if (typeof v === 'number') name = Object.entries(e.values).find(([, n]) => n === v)?.[0];
    if (name === undefined) {
      return this.issue(path, `${JSON.stringify(v)} is not a value of ${e.fullName.slice(1)} (${Object.keys(e.values).join(', ')})`);
    }
    const dep = deprecatedNote(e.valuesOptions?.[name] as Record<string, unknown> | undefined);
    if (dep !== undefined) this.issue(path, `${dep}: ${e.fullName.slice(1)}.${name}`);
    if (rules !== undefined) {
      const n = e.values[name]!;
      if (rules['const'] !== undefined && n !== rules['const']) this.issue(path, `must be ${String(rules['const'])}`);
      if (Array.isArray(rules['in']) && !rules['in'].includes(n)) this.issue(path, `${name} is not allowed here`);
      if (Array.isArray(rules['not_in']) && rules['not_in'].includes(n)) this.issue(path, `${name} is not allowed here`);
    }
  }

  /** The protobuf well-known types, which JSON spells their own way. True when handled. */
  private wellKnown(v: Json, type: protobuf.Type, path: string): boolean {
    const name = type.fullName.slice(1);
    const wrapped = WRAPPERS[name];
    if (wrapped !== undefined) {
      this.scalar(v, wrapped, path, undefined);
      return true;
    }
    switch (name) {
      case 'google.protobuf.Duration':
        if (typeof v !== 'string' || !DURATION.test(v)) this.issue(path, `must be a duration such as "1.5s", not ${JSON.stringify(v)}`);
        return true;
      case 'google.protobuf.Timestamp':
        if (typeof v !== 'string' || !TIMESTAMP.test(v)) this.issue(path, `must be an RFC 3339 timestamp, not ${JSON.stringify(v)}`);
        return true;
      case 'google.protobuf.FieldMask':
        if (typeof v !== 'string') this.issue(path, 'must be a field mask string');
        return true;
      case 'google.protobuf.Struct':
        if (!isObject(v)) this.issue(path, `must be an object, not ${kindOf(v)}`);
        return true;
      case 'google.protobuf.Value':
        return true;
      case 'google.protobuf.ListValue':
        if (!Array.isArray(v)) this.issue(path, `must be a list, not ${kindOf(v)}`);
        return true;
      case 'google.protobuf.Any':
        this.any(v, path);
        return true;
      default:
        return false;
    }
  }

  private any(v: Json, path: string): void {
    if (!isObject(v)) return this.issue(path, `must be an object with "@type", not ${kindOf(v)}`);
    const url = v['@type'];
    if (typeof url !== 'string') return this.issue(path, 'has no "@type"');
    const m = TYPE_URL.exec(url);
    let t: protobuf.Type | undefined;
    if (m !== null) {
      try {
        t = this.root.lookupType('.' + m[1]!);
      } catch {
        t = undefined;
      }
    }
    if (t === undefined) return this.issue(`${path}.@type`, `${url} names no message of the Envoy API`);
    const { '@type': _type, ...rest } = v;
    const fullName = t.fullName.slice(1);
    if (fullName.startsWith('google.protobuf.') && (WRAPPERS[fullName] !== undefined || ['google.protobuf.Duration', 'google.protobuf.Struct', 'google.protobuf.Value', 'google.protobuf.Timestamp', 'google.protobuf.FieldMask', 'google.protobuf.ListValue'].includes(fullName))) {
      const extra = Object.keys(rest).filter((k) => k !== 'value');
      for (const k of extra) this.issue(`${path}.${k}`, `unknown field of ${fullName} in an Any (the value goes in "value")`);
      if (rest['value'] !== undefined) this.message(rest['value'], t, `${path}.value`);
      return;
    }
    this.message(rest, t, path);
  }
}

/** Walks `value` as the message `typeName` (e.g. `envoy.config.bootstrap.v3.Bootstrap`). */
export function walkMessage(value: unknown, typeName: string): { issues: WalkIssue[]; clusterRefs: { path: string; name: string }[] } {
  const root = envoyApi();
  const w = new Walker(root);
  w.message(value as Json, root.lookupType(typeName), '');
  return { issues: w.issues, clusterRefs: w.clusterRefs };
}

/**
 * Walks an Envoy bootstrap: every issue of the walk, plus every `cluster` it names that no
 * static cluster defines (Envoy refuses a route to an unknown cluster at load when
 * `validate_clusters` holds, and an ext_authz or tracer cluster at its first call).
 */
export function walkBootstrap(value: unknown): WalkIssue[] {
  const { issues, clusterRefs } = walkMessage(value, 'envoy.config.bootstrap.v3.Bootstrap');
  const clusters = (value as { static_resources?: { clusters?: { name?: unknown }[] } })?.static_resources?.clusters ?? [];
  const defined = new Set(Array.isArray(clusters) ? clusters.map((c) => c?.name) : []);
  for (const ref of clusterRefs) {
    if (!defined.has(ref.name)) issues.push({ path: ref.path, problem: `cluster ${JSON.stringify(ref.name)} is not defined in static_resources.clusters` });
  }
  return issues;
}
