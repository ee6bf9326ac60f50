/**
 * A local copy of one collection, kept by list-then-watch: list, watch from the list's
 * resourceVersion, follow each event's resourceVersion (bookmarks included), relist when the
 * server says the version is gone (410, `Expired`/`Gone`), back off on any other failure.
 */
import { ApiError, type KubeApi, type WatchEvent } from './api.ts';

/** Waits between failed attempts: doubling from the first to the last. */
export interface Backoff {
  initialMs: number;
  maxMs: number;
}

const DEFAULT_BACKOFF: Backoff = { initialMs: 500, maxMs: 30_000 };
/** How long the server may hold one watch before it ends it and we resume (a fresh connection now and then). */
const WATCH_TIMEOUT_S = 300;

export interface ReflectorOptions {
  api: KubeApi;
  /** The collection path, e.g. `/api/v1/namespaces/ns/pods`. */
  path: string;
  /** Called after every change to the copy (and after each relist). */
  onChange: () => void;
  /** Called on a failure before the back-off (for logs and metrics); `kind` is bounded. */
  onError?: (kind: 'list' | 'watch' | 'gone', err: unknown) => void;
  backoff?: Backoff;
}

export interface Reflector {
  start(): void;
  stop(): Promise<void>;
  /** Objects by name. */
  items(): Map<string, any>;
  /** True once the first list arrived. */
  synced(): boolean;
  /** Lists made (the first and every relist). */
  lists(): number;
}

class Gone extends Error {}

const isGone = (err: unknown): boolean =>
  err instanceof Gone || (err instanceof ApiError && err.status === 410) || (err as { statusCode?: number })?.statusCode === 410;

export function createReflector(options: ReflectorOptions): Reflector {
  const { api, path, onChange } = options;
  const backoff = options.backoff ?? DEFAULT_BACKOFF;
  let items = new Map<string, any>();
  let resourceVersion = '';
  let stopped = true;
  let synced = false;
  let lists = 0;
  let running: Promise<void> | undefined;
  let current: { abort(): void } | undefined;
  let wake: (() => void) | undefined;

  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(t);
        resolve();
      };
    });

  async function list(): Promise<void> {
    const answer = await api.request<{ metadata?: { resourceVersion?: string }; items?: any[] }>('GET', path);
    const next = new Map<string, any>();
    for (const item of answer.items ?? []) if (item?.metadata?.name !== undefined) next.set(item.metadata.name, item);
    items = next;
    resourceVersion = answer.metadata?.resourceVersion ?? '';
    synced = true;
    lists += 1;
    onChange();
  }

  /** One watch; resolves when the server ends it, rejects on a failure (Gone for 410). Reports whether any event came. */
  function watchOnce(): Promise<boolean> {
    return new Promise((resolve, reject) => {
      let seen = false;
      let gone = false;
      let failure: unknown;
      const onEvent = (e: WatchEvent): void => {
        if (stopped) return;
        seen = true;
        if (e.type === 'ERROR') {
          // The documented way a watch ends on a version too old: a Status in the stream.
          if (e.object?.code === 410) gone = true;
          else failure = new ApiError(e.object?.code ?? 500, e.object?.reason ?? 'Unknown', e.object?.message ?? 'watch error');
          current?.abort();
          return;
        }
        const rv = e.object?.metadata?.resourceVersion;
        if (typeof rv === 'string' && rv !== '') resourceVersion = rv;
        if (e.type === 'BOOKMARK') return;
        const name = e.object?.metadata?.name;
        if (typeof name !== 'string') return;
        if (e.type === 'DELETED') items.delete(name);
        else items.set(name, e.object);
        onChange();
      };
      const onDone = (err?: unknown): void => {
        current = undefined;
        if (gone) reject(new Gone('resource version gone'));
        else if (failure !== undefined) reject(failure);
        else if (err !== undefined && err !== null && !stopped) reject(err);
        else resolve(seen);
      };
      api
        .watch(path, { resourceVersion, allowWatchBookmarks: 'true', timeoutSeconds: String(WATCH_TIMEOUT_S) }, onEvent, onDone)
        .then((handle) => {
          current = handle;
          if (stopped) handle.abort();
        }, reject);
    });
  }

  async function loop(): Promise<void> {
    let wait = backoff.initialMs;
    while (!stopped) {
      const began = Date.now();
      try {
        if (resourceVersion === '') await list();
        const sawEvents = await watchOnce();
        // A server that ends watches at once with nothing in them is failing quietly: back off.
        if (!sawEvents && Date.now() - began < 1_000) {
          await sleep(wait);
          wait = Math.min(wait * 2, backoff.maxMs);
        } else wait = backoff.initialMs;
      } catch (err) {
        if (stopped) break;
        if (isGone(err)) {
          options.onError?.('gone', err);
          resourceVersion = '';
          continue;
        }
        options.onError?.(resourceVersion === '' ? 'list' : 'watch', err);
        await sleep(wait);
        wait = Math.min(wait * 2, backoff.maxMs);
      }
    }
  }

  return {
    start() {
      if (!stopped) return;
      stopped = false;
      running = loop();
    },
    async stop() {
      stopped = true;
      current?.abort();
      wake?.();
      await running;
    },
    items: () => items,
    synced: () => synced,
    lists: () => lists,
  };
}
