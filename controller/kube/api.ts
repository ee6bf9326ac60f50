/**
 * The controller's way to the Kubernetes API: @kubernetes/client-node loads the credentials
 * (KUBECONFIG outside a cluster, the service account inside) and streams watches; requests are
 * plain JSON over the agent and headers it configures, so each write names its own content type
 * (merge patch for the status and scale subresources) and carries the exact bytes the API server
 * expects (MicroTime for Leases and Events).
 */
import http from 'node:http';
import https from 'node:https';
import { KubeConfig, Watch } from '@kubernetes/client-node';

/** An answer of the API server other than 2xx, with its `Status` reason (`Conflict`, `Expired`, …). */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(readonly status: number, readonly reason: string, message: string) {
    super(message);
  }
}

export const MERGE_PATCH = 'application/merge-patch+json';

/** One watch event as the API server streams it. */
export interface WatchEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';
  object: any;
}

export interface KubeApi {
  /** GET/POST/PUT/PATCH/DELETE with a JSON body; resolves with the parsed answer, throws ApiError otherwise. */
  request<T = any>(method: string, path: string, body?: unknown, contentType?: string): Promise<T>;
  /**
   * Opens a watch on a collection path; `onEvent` gets each event, `onDone` the end of the stream
   * (an error for a failed request, with `statusCode` when the server answered one).
   */
  watch(path: string, params: Record<string, string>, onEvent: (e: WatchEvent) => void, onDone: (err?: unknown) => void): Promise<{ abort(): void }>;
  /** The namespace of the current kubeconfig context, when it names one. */
  contextNamespace(): string | undefined;
}

/** Loads credentials the way docs/operations.md "Settings" describes (KUBECONFIG): a kubeconfig file, else in-cluster. */
export function loadKubeConfig(options: { kubeconfig?: string | undefined; inCluster: boolean }): KubeConfig {
  const kc = new KubeConfig();
  if (options.kubeconfig !== undefined) kc.loadFromFile(options.kubeconfig);
  else if (options.inCluster) kc.loadFromCluster();
  else throw new Error('no Kubernetes credentials: set KUBECONFIG, or run the controller inside a cluster');
  return kc;
}

/** Upper bound on an answer body read into memory (a list of a large namespace fits easily). */
const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

export function createKubeApi(kc: KubeConfig): KubeApi {
  const watcher = new Watch(kc);
  return {
    async request(method, path, body, contentType = 'application/json') {
      const cluster = kc.getCurrentCluster();
      if (cluster === null) throw new Error('the kubeconfig has no current cluster');
      const url = new URL(cluster.server.replace(/\/$/, '') + path);
      const opts: https.RequestOptions = { method, headers: { accept: 'application/json' } };
      await kc.applyToHTTPSOptions(opts);
      const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
      if (payload !== undefined) Object.assign(opts.headers!, { 'content-type': contentType, 'content-length': payload.length });
      const lib = url.protocol === 'https:' ? https : http;
      return new Promise((resolve, reject) => {
        const req = lib.request(url, opts, (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (c: Buffer) => {
            size += c.length;
            if (size > MAX_ANSWER_BYTES) req.destroy(new Error('answer too large'));
            else chunks.push(c);
          });
          res.on('error', reject);
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: any;
            try {
              parsed = text === '' ? {} : JSON.parse(text);
            } catch {
              parsed = undefined;
            }
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300 && parsed !== undefined) resolve(parsed);
            else reject(new ApiError(status, parsed?.reason ?? 'Unknown', parsed?.message ?? `HTTP ${status}`));
          });
        });
        req.setTimeout(30_000, () => req.destroy(new Error('the API server did not answer within 30 s')));
        req.on('error', reject);
        req.end(payload);
      });
    },
    async watch(path, params, onEvent, onDone) {
      return watcher.watch(path, params, (type: string, object: any) => onEvent({ type: type as WatchEvent['type'], object }), onDone);
    },
    contextNamespace() {
      const ctx = kc.getContextObject(kc.getCurrentContext());
      return ctx?.namespace;
    },
  };
}
