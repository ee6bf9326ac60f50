/**
 * A Kubernetes API server for the controller's tests, on loopback, written from the API's
 * documentation ("API Concepts": efficient detection of changes, resource versions, watch
 * bookmarks, 410 Gone, subresources, patch types; the Lease and Event references). It keeps
 * objects in memory with one resourceVersion counter, as etcd does, and speaks JSON only.
 *
 * What it does as the real one does:
 * - bearer-token authentication (401 otherwise), `Status` bodies for every error;
 * - list answers carry the collection's resourceVersion; a list with a resourceVersion older than
 *   the compacted history is 410 Gone;
 * - `?watch=true&resourceVersion=N` streams (chunked) every change after N as one JSON event per
 *   line (ADDED, MODIFIED, DELETED), BOOKMARKs when asked with allowWatchBookmarks, and an ERROR
 *   event carrying a 410 `Expired` Status when N is older than the history it keeps;
 * - PUT with a stale metadata.resourceVersion is 409 Conflict, and so is a patch carrying one;
 *   create of an existing name is 409 AlreadyExists; generateName is honoured;
 * - PATCH takes application/merge-patch+json and application/strategic-merge-patch+json, and
 *   answers 415 for a strategic merge patch on a custom resource, which has no patch strategy;
 * - the status subresource: writes to the object keep its status, writes to /status change only
 *   the status; metadata.generation moves only when the spec does;
 * - Deployments' scale subresource answers an autoscaling/v1 Scale and writes spec.replicas;
 * - custom resources get their CRD's schema defaults and the bounds and CEL rules it states
 *   (422 Invalid otherwise; only the comparison rules the CRD uses are evaluated);
 * - Lease spec.acquireTime/renewTime and Event eventTime are MicroTime: any width but six
 *   fractional digits is 400, with the message the real server gives.
 * Strategic merge of lists by key is not needed by the controller and is done as a merge patch.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { parse as parseYaml } from 'yaml';

export type Resource = 'pods' | 'deployments' | 'renderpools' | 'leases' | 'events';

interface ResourceInfo {
  prefix: string;
  apiVersion: string;
  kind: string;
  custom?: boolean;
  statusSubresource?: boolean;
  /** Dotted paths of MicroTime fields. */
  microTimes?: string[];
}

const RESOURCES: Record<Resource, ResourceInfo> = {
  pods: { prefix: '/api/v1', apiVersion: 'v1', kind: 'Pod', statusSubresource: true },
  deployments: { prefix: '/apis/apps/v1', apiVersion: 'apps/v1', kind: 'Deployment', statusSubresource: true },
  renderpools: { prefix: '/apis/tintype.dev/v1alpha1', apiVersion: 'tintype.dev/v1alpha1', kind: 'RenderPool', custom: true, statusSubresource: true },
  leases: { prefix: '/apis/coordination.k8s.io/v1', apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', microTimes: ['spec.acquireTime', 'spec.renewTime'] },
  events: { prefix: '/apis/events.k8s.io/v1', apiVersion: 'events.k8s.io/v1', kind: 'Event', microTimes: ['eventTime'] },
};

const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$/;

export const CRD_PATH = new URL('../../charts/tintype/crds/renderpools.tintype.dev.yaml', import.meta.url);

/** A request the server saw (for assertions on what was written and how). */
export interface SeenRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  contentType: string | undefined;
  status: number;
}

interface Watcher {
  resource: Resource;
  namespace: string;
  bookmarks: boolean;
  res: http.ServerResponse;
}

export interface FakeApiServer {
  url: string;
  token: string;
  requests: SeenRequest[];
  /** Creates or replaces an object as another client would (events go to watchers). */
  apply(resource: Resource, namespace: string, obj: any): any;
  remove(resource: Resource, namespace: string, name: string): void;
  get(resource: Resource, namespace: string, name: string): any;
  list(resource: Resource, namespace: string): any[];
  /** Ends every open watch with a 410 and forgets history: watchers must relist. */
  expireWatches(): void;
  /** Sends a BOOKMARK to every watch that asked for them. */
  bookmark(): void;
  /** Ends every open watch cleanly, as the server does when a watch's timeoutSeconds pass. */
  dropWatches(): void;
  /** The store's current resourceVersion. */
  version(): string;
  /** Answers the next requests matching `match` with `status` (e.g. 500 for Lease updates). */
  failWhile(match: (method: string, path: string) => boolean, status: number): () => void;
  openWatches(): number;
  close(): Promise<void>;
}

const status = (code: number, reason: string, message: string) =>
  ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });

class HttpError extends Error {
  constructor(readonly code: number, readonly reason: string, message: string) {
    super(message);
  }
}

const clone = <T>(v: T): T => (v === undefined ? v : JSON.parse(JSON.stringify(v)));

/** RFC 7386 JSON merge patch. */
export function mergePatch(target: any, patch: any): any {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return clone(patch);
  const out = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function getPath(obj: any, dotted: string): unknown {
  return dotted.split('.').reduce((o, k) => (o == null ? undefined : o[k]), obj);
}

/** Applies a structural schema's defaults, bounds and (comparison) CEL rules to `value`. */
function schemaCheck(schema: any, value: any, at: string, errors: string[]): any {
  if (schema === undefined || value === undefined || value === null) return value;
  if (schema.type === 'object' && typeof value === 'object' && !Array.isArray(value)) {
    const props = schema.properties ?? {};
    for (const [k, s] of Object.entries<any>(props)) {
      if (value[k] === undefined && s.default !== undefined) value[k] = clone(s.default);
      value[k] = schemaCheck(s, value[k], `${at}.${k}`, errors);
      if (value[k] === undefined) delete value[k];
    }
    for (const r of schema.required ?? []) if (value[r] === undefined) errors.push(`${at}.${r}: Required value`);
    for (const v of schema['x-kubernetes-validations'] ?? []) {
      const m = /^self\.(\w+) (>=|<=|>|<|==) self\.(\w+)$/.exec(v.rule);
      if (m === null) throw new Error(`the fake API server cannot evaluate the CEL rule ${v.rule}`);
      const [a, b] = [value[m[1]!], value[m[3]!]];
      const ok = { '>=': a >= b, '<=': a <= b, '>': a > b, '<': a < b, '==': a === b }[m[2] as '>='];
      if (!ok) errors.push(`${at}${v.fieldPath ?? ''}: Invalid value: ${v.message ?? v.rule}`);
    }
    return value;
  }
  if (schema.type === 'integer' && !Number.isInteger(value)) errors.push(`${at}: Invalid value: must be an integer`);
  if (schema.type === 'number' && typeof value !== 'number') errors.push(`${at}: Invalid value: must be a number`);
  if (schema.type === 'string' && typeof value !== 'string') errors.push(`${at}: Invalid value: must be a string`);
  if (typeof value === 'number') {
    if (schema.minimum !== undefined && value < schema.minimum) errors.push(`${at}: Invalid value: ${value}: should be greater than or equal to ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) errors.push(`${at}: Invalid value: ${value}: should be less than or equal to ${schema.maximum}`);
  }
  if (typeof value === 'string' && schema.minLength !== undefined && value.length < schema.minLength) errors.push(`${at}: Invalid value: too short`);
  if (schema.enum !== undefined && !schema.enum.includes(value)) errors.push(`${at}: Unsupported value: ${JSON.stringify(value)}`);
  if (schema.type === 'array' && Array.isArray(value)) return value.map((v, i) => schemaCheck(schema.items, v, `${at}[${i}]`, errors));
  return value;
}

export async function startFakeApiServer(options: { host?: string } = {}): Promise<FakeApiServer> {
  const crd = parseYaml(readFileSync(CRD_PATH, 'utf8'));
  const crSchema = crd.spec.versions.find((v: any) => v.name === 'v1alpha1').schema.openAPIV3Schema;
  const token = randomBytes(12).toString('hex');
  let rv = 100;
  let compactedBefore = 0;
  const store = new Map<string, any>(); // `${resource}/${ns}/${name}`
  const history: Array<{ rv: number; resource: Resource; namespace: string; type: string; obj: any }> = [];
  const watchers = new Set<Watcher>();
  const requests: SeenRequest[] = [];
  const failures: Array<{ match: (m: string, p: string) => boolean; status: number }> = [];

  const key = (r: Resource, ns: string, name: string): string => `${r}/${ns}/${name}`;

  function emit(resource: Resource, namespace: string, type: string, obj: any): void {
    history.push({ rv: Number(obj.metadata.resourceVersion), resource, namespace, type, obj: clone(obj) });
    for (const w of watchers) {
      if (w.resource === resource && w.namespace === namespace) w.res.write(`${JSON.stringify({ type, object: obj })}\n`);
    }
  }

  function validate(resource: Resource, obj: any): void {
    const info = RESOURCES[resource];
    for (const p of info.microTimes ?? []) {
      const v = getPath(obj, p);
      if (v !== undefined && (typeof v !== 'string' || !MICRO_TIME.test(v))) {
        throw new HttpError(400, 'BadRequest',
          `${info.kind} in version "${info.apiVersion.split('/').pop()}" cannot be handled as a ${info.kind}: parsing time ${JSON.stringify(v)} as "2006-01-02T15:04:05.000000Z07:00": cannot parse as ".000000"`);
      }
    }
    if (info.custom) {
      const errors: string[] = [];
      schemaCheck(crSchema, obj, '', errors);
      if (errors.length > 0) throw new HttpError(422, 'Invalid', `${info.kind}.${info.apiVersion.split('/')[0]} "${obj.metadata?.name}" is invalid: ${errors.map((e) => e.replace(/^\./, '')).join(', ')}`);
    }
  }

  function write(resource: Resource, namespace: string, obj: any, previous: any | undefined): any {
    const info = RESOURCES[resource];
    obj.apiVersion = info.apiVersion;
    obj.kind = info.kind;
    obj.metadata = { ...obj.metadata, namespace };
    validate(resource, obj);
    rv += 1;
    obj.metadata.resourceVersion = String(rv);
    if (previous === undefined) {
      obj.metadata.uid = randomUUID();
      obj.metadata.creationTimestamp = `${new Date().toISOString().slice(0, 19)}Z`;
      obj.metadata.generation = 1;
    } else {
      obj.metadata.uid = previous.metadata.uid;
      obj.metadata.creationTimestamp = previous.metadata.creationTimestamp;
      const specChanged = JSON.stringify(obj.spec) !== JSON.stringify(previous.spec);
      obj.metadata.generation = (previous.metadata.generation ?? 1) + (specChanged ? 1 : 0);
    }
    store.set(key(resource, namespace, obj.metadata.name), obj);
    emit(resource, namespace, previous === undefined ? 'ADDED' : 'MODIFIED', obj);
    return obj;
  }

  function create(resource: Resource, namespace: string, body: any): any {
    const obj = clone(body ?? {});
    obj.metadata ??= {};
    if (!obj.metadata.name && obj.metadata.generateName) obj.metadata.name = `${obj.metadata.generateName}${randomBytes(3).toString('hex').slice(0, 5)}`;
    if (!obj.metadata.name) throw new HttpError(422, 'Invalid', 'metadata.name: Required value');
    if (store.has(key(resource, namespace, obj.metadata.name))) {
      throw new HttpError(409, 'AlreadyExists', `${RESOURCES[resource].kind.toLowerCase()}s "${obj.metadata.name}" already exists`);
    }
    // On create, the status subresource's status is not taken from the body.
    if (RESOURCES[resource].statusSubresource && RESOURCES[resource].custom) delete obj.status;
    return write(resource, namespace, obj, undefined);
  }

  /** An update of the object or its status, with the optimistic-concurrency check. */
  function update(resource: Resource, namespace: string, name: string, next: any, sub: 'status' | undefined, sentVersion: unknown): any {
    const previous = store.get(key(resource, namespace, name));
    if (previous === undefined) throw new HttpError(404, 'NotFound', `${RESOURCES[resource].kind.toLowerCase()}s "${name}" not found`);
    if (sentVersion !== undefined && sentVersion !== '' && sentVersion !== previous.metadata.resourceVersion) {
      throw new HttpError(409, 'Conflict',
        `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`);
    }
    let obj: any;
    if (sub === 'status') obj = { ...clone(previous), status: clone(next.status) };
    else {
      obj = clone(next);
      obj.metadata = { ...clone(previous.metadata), ...obj.metadata, name };
      if (RESOURCES[resource].statusSubresource) obj.status = clone(previous.status);
    }
    return write(resource, namespace, obj, previous);
  }

  function applyPatch(resource: Resource, base: any, patch: any, contentType: string | undefined): any {
    if (contentType === 'application/merge-patch+json') return mergePatch(base, patch);
    if (contentType === 'application/strategic-merge-patch+json') {
      if (RESOURCES[resource].custom) throw new HttpError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`);
      return mergePatch(base, patch);
    }
    throw new HttpError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json`);
  }

  function scaleOf(dep: any): any {
    const labels = dep.spec?.selector?.matchLabels ?? {};
    return {
      kind: 'Scale', apiVersion: 'autoscaling/v1',
      metadata: { name: dep.metadata.name, namespace: dep.metadata.namespace, uid: dep.metadata.uid, resourceVersion: dep.metadata.resourceVersion, creationTimestamp: dep.metadata.creationTimestamp },
      spec: { replicas: dep.spec?.replicas ?? 1 },
      status: { replicas: dep.status?.replicas ?? 0, selector: Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(',') },
    };
  }

  function items(resource: Resource, namespace: string): any[] {
    const prefix = `${resource}/${namespace}/`;
    return [...store.entries()].filter(([k]) => k.startsWith(prefix)).map(([, v]) => v);
  }

  function startWatch(resource: Resource, namespace: string, query: URLSearchParams, res: http.ServerResponse): void {
    const from = query.get('resourceVersion') ?? '';
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked', 'cache-control': 'no-cache, private' });
    res.flushHeaders();
    const fromRv = from === '' || from === '0' ? rv : Number(from);
    if (!Number.isFinite(fromRv) || fromRv < compactedBefore) {
      res.end(`${JSON.stringify({ type: 'ERROR', object: status(410, 'Expired', `too old resource version: ${from} (${compactedBefore})`) })}\n`);
      return;
    }
    const w: Watcher = { resource, namespace, bookmarks: query.get('allowWatchBookmarks') === 'true', res };
    for (const h of history) {
      if (h.resource === resource && h.namespace === namespace && h.rv > fromRv) res.write(`${JSON.stringify({ type: h.type, object: h.obj })}\n`);
    }
    watchers.add(w);
    res.on('close', () => watchers.delete(w));
  }

  async function body(req: http.IncomingMessage): Promise<any> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (chunks.length === 0) return undefined;
    try {
      return JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      throw new HttpError(400, 'BadRequest', 'the body is not JSON');
    }
  }

  async function route(req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<unknown> {
    if (req.headers.authorization !== `Bearer ${token}`) throw new HttpError(401, 'Unauthorized', 'Unauthorized');
    const failing = failures.find((f) => f.match(req.method!, url.pathname));
    if (failing !== undefined) throw new HttpError(failing.status, 'InternalError', 'injected failure');
    for (const [resource, info] of Object.entries(RESOURCES) as Array<[Resource, ResourceInfo]>) {
      const m = new RegExp(`^${info.prefix}/namespaces/([^/]+)/${resource}(?:/([^/]+))?(?:/(status|scale))?$`).exec(url.pathname);
      if (m === null) continue;
      const [, namespace, name, sub] = m as unknown as [string, string, string | undefined, 'status' | 'scale' | undefined];
      if (sub === 'scale' && resource !== 'deployments') break;
      if (sub === 'status' && !info.statusSubresource) break;
      const method = req.method!;
      if (name === undefined) {
        if (method === 'GET') {
          if (url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1') {
            startWatch(resource, namespace, url.searchParams, res);
            return undefined;
          }
          const asked = url.searchParams.get('resourceVersion');
          if (asked && asked !== '0' && Number(asked) < compactedBefore) throw new HttpError(410, 'Expired', `too old resource version: ${asked}`);
          const list = items(resource, namespace).map((o) => {
            const c = clone(o);
            if (!info.custom) {
              delete c.kind;
              delete c.apiVersion;
            }
            return c;
          });
          return { kind: `${info.kind}List`, apiVersion: info.apiVersion, metadata: { resourceVersion: String(rv) }, items: list };
        }
        if (method === 'POST') return [201, create(resource, namespace, await body(req))];
        throw new HttpError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource');
      }
      const current = store.get(key(resource, namespace, name));
      if (method === 'GET') {
        if (current === undefined) throw new HttpError(404, 'NotFound', `${resource} "${name}" not found`);
        return sub === 'scale' ? scaleOf(current) : current;
      }
      if (method === 'PUT' || method === 'PATCH') {
        if (current === undefined) throw new HttpError(404, 'NotFound', `${resource} "${name}" not found`);
        const b = await body(req);
        const contentType = req.headers['content-type']?.split(';')[0]?.trim();
        if (sub === 'scale') {
          const scale = method === 'PUT' ? b : applyPatch(resource, scaleOf(current), b, contentType);
          const sent = b?.metadata?.resourceVersion;
          const next = { ...clone(current), spec: { ...current.spec, replicas: scale?.spec?.replicas } };
          return scaleOf(update(resource, namespace, name, next, undefined, sent));
        }
        const next = method === 'PUT' ? b : applyPatch(resource, clone(current), b, contentType);
        return update(resource, namespace, name, next, sub, b?.metadata?.resourceVersion);
      }
      if (method === 'DELETE') {
        if (current === undefined) throw new HttpError(404, 'NotFound', `${resource} "${name}" not found`);
        api.remove(resource, namespace, name);
        return status(200, '', '');
      }
      throw new HttpError(405, 'MethodNotAllowed', 'method not allowed');
    }
    throw new HttpError(404, 'NotFound', 'the server could not find the requested resource');
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const seen: SeenRequest = { method: req.method ?? '', path: url.pathname, query: url.searchParams, contentType: req.headers['content-type'], status: 200 };
    requests.push(seen);
    route(req, res, url).then(
      (answer) => {
        if (answer === undefined) return;
        const [code, obj] = Array.isArray(answer) ? answer : [200, answer];
        seen.status = code;
        res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(obj));
      },
      (err: unknown) => {
        const e = err instanceof HttpError ? err : new HttpError(500, 'InternalError', (err as Error).message);
        seen.status = e.code;
        res.writeHead(e.code, { 'content-type': 'application/json' }).end(JSON.stringify(status(e.code, e.reason, e.message)));
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, options.host ?? '127.0.0.1', resolve));
  const { port, address } = server.address() as AddressInfo;

  const api: FakeApiServer = {
    url: `http://${address}:${port}`,
    token,
    requests,
    apply(resource, namespace, obj) {
      const previous = store.get(key(resource, namespace, obj.metadata.name));
      return previous === undefined ? create(resource, namespace, obj) : write(resource, namespace, clone(obj), previous);
    },
    remove(resource, namespace, name) {
      const obj = store.get(key(resource, namespace, name));
      if (obj === undefined) return;
      store.delete(key(resource, namespace, name));
      rv += 1;
      emit(resource, namespace, 'DELETED', { ...obj, metadata: { ...obj.metadata, resourceVersion: String(rv) } });
    },
    get: (resource, namespace, name) => clone(store.get(key(resource, namespace, name))),
    list: (resource, namespace) => clone(items(resource, namespace)),
    expireWatches() {
      compactedBefore = rv;
      history.length = 0;
      for (const w of watchers) w.res.end(`${JSON.stringify({ type: 'ERROR', object: status(410, 'Expired', 'too old resource version') })}\n`);
      watchers.clear();
    },
    bookmark() {
      for (const w of watchers) {
        if (!w.bookmarks) continue;
        const info = RESOURCES[w.resource];
        w.res.write(`${JSON.stringify({ type: 'BOOKMARK', object: { kind: info.kind, apiVersion: info.apiVersion, metadata: { resourceVersion: String(rv) } } })}\n`);
      }
    },
    dropWatches() {
      for (const w of watchers) w.res.end();
      watchers.clear();
    },
    version: () => String(rv),
    failWhile(match, code) {
      const f = { match, status: code };
      failures.push(f);
      return () => void failures.splice(failures.indexOf(f), 1);
    },
    openWatches: () => watchers.size,
    close: () =>
      new Promise((resolve) => {
        for (const w of watchers) w.res.end();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return api;
}

/** Writes a kubeconfig at `file` that reaches `server` with its token; the context's namespace when given. */
export async function writeKubeconfig(file: string, server: FakeApiServer, namespace?: string): Promise<void> {
  await writeFile(file, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'test',
    clusters: [{ name: 'fake', cluster: { server: server.url, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'controller', user: { token: server.token } }],
    contexts: [{ name: 'test', context: { cluster: 'fake', user: 'controller', ...(namespace === undefined ? {} : { namespace }) } }],
  }));
}
