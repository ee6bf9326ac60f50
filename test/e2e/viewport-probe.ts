/**
 * A page that tells what it saw while it was parsed (docs/architecture.md §3, "one owner of a
 * tab's emulation"): its viewport, scale, screen, a width media query and which `srcset`
 * candidate it fetched. The report leaves by a synchronous request made from the parser, so it
 * has reached the site before DOMContentLoaded, whatever the render waits for.
 */
import http from 'node:http';
import { listenBesideService } from '../lib/listen-beside.ts';
import { SITE_ADDRESS } from './site.ts';

/** A 1x1 PNG, every candidate's bytes. */
const PIXEL = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');

/** The `srcset` densities the probe offers: one for each scale the operations allow a test to ask for. */
export const CANDIDATES = ['1x', '1.5x', '2x'] as const;

/** What a probe page saw while it was parsed. */
export interface Seen {
  innerWidth: number;
  innerHeight: number;
  devicePixelRatio: number;
  screenWidth: number;
  screenHeight: number;
  /** `matchMedia('(min-width: <width>px)')` for the width the render asked for. */
  minWidthMatches: boolean;
  /** The same one pixel wider. */
  widerMatches: boolean;
}

export interface ProbeSite {
  base: string;
  /** The probe page's markup for render `id`, judging media queries against `width`. */
  html(id: string, width: number): string;
  /** The probe's address for render `id` (a URL render). */
  url(id: string, width: number): string;
  /** What render `id` saw; rejects, naming it, if no report came within the bound. */
  seen(id: string): Promise<Seen>;
  /** The `srcset` candidate render `id` fetched (e.g. `2x`); rejects if none came within the bound. */
  candidate(id: string): Promise<string>;
  close(): Promise<void>;
}

/** How long a test waits for a report or a candidate: far above a render, far below tap's timeout. */
const REPORT_BOUND_MS = 20_000;

/** Values kept per render id, with the waiters of those not come yet. */
class Arrivals<T> {
  private readonly values = new Map<string, T>();
  private readonly waiters = new Map<string, (v: T) => void>();

  constructor(private readonly what: string) {}

  put(id: string, value: T): void {
    if (this.values.has(id)) return; // the first is what the page saw while it was parsed
    this.values.set(id, value);
    this.waiters.get(id)?.(value);
  }

  get(id: string): Promise<T> {
    const have = this.values.get(id);
    if (have !== undefined) return Promise.resolve(have);
    return new Promise((resolve, reject) => {
      const late = setTimeout(() => reject(new Error(`no ${this.what} for ${id} within ${REPORT_BOUND_MS} ms`)), REPORT_BOUND_MS);
      late.unref();
      this.waiters.set(id, (v) => {
        clearTimeout(late);
        resolve(v);
      });
    });
  }
}

export async function startProbeSite(address = SITE_ADDRESS): Promise<ProbeSite> {
  const reports = new Arrivals<Seen>('report');
  const candidates = new Arrivals<string>('srcset candidate');
  let base = '';
  const page = (id: string, width: number): string => {
    const srcset = CANDIDATES.map((c) => `${base}/candidate/${id}/${c}.png ${c}`).join(', ');
    // Plain ES5 in a string: it runs in the page while the parser is at it.
    const script = `(function () {
  var q = 'w=' + innerWidth + '&h=' + innerHeight + '&dpr=' + devicePixelRatio +
    '&sw=' + screen.width + '&sh=' + screen.height +
    '&mq=' + (matchMedia('(min-width: ${width}px)').matches ? 1 : 0) +
    '&mq1=' + (matchMedia('(min-width: ${width + 1}px)').matches ? 1 : 0);
  var x = new XMLHttpRequest();
  x.open('GET', '${base}/report/${id}?' + q, false);
  try { x.send(); } catch (e) {}
})();`;
    return `<!doctype html><html><head><meta charset="utf-8"></head><body style="margin:0;background:#fff">` +
      `<img alt="" width="1" height="1" srcset="${srcset}"><script>${script}</script></body></html>`;
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://probe');
    const probe = /^\/probe\/([a-z0-9-]+)$/.exec(url.pathname);
    const report = /^\/report\/([a-z0-9-]+)$/.exec(url.pathname);
    const candidate = /^\/candidate\/([a-z0-9-]+)\/([0-9.]+x)\.png$/.exec(url.pathname);
    if (probe !== null) {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page(probe[1]!, Number(url.searchParams.get('width'))));
    } else if (report !== null) {
      const n = (k: string): number => Number(url.searchParams.get(k));
      reports.put(report[1]!, {
        innerWidth: n('w'), innerHeight: n('h'), devicePixelRatio: n('dpr'), screenWidth: n('sw'), screenHeight: n('sh'),
        minWidthMatches: n('mq') === 1, widerMatches: n('mq1') === 1,
      });
      // The markup renders' origin is opaque: let the report be read, so nothing in the page fails.
      res.writeHead(204, { 'access-control-allow-origin': '*' }).end();
    } else if (candidate !== null) {
      candidates.put(candidate[1]!, candidate[2]!);
      res.writeHead(200, { 'content-type': 'image/png', 'access-control-allow-origin': '*' }).end(PIXEL);
    } else {
      res.writeHead(404).end();
    }
  });
  const port = await listenBesideService(server, address);
  base = `http://${address}:${port}`;
  return {
    base,
    html: page,
    url: (id, width) => `${base}/probe/${id}?width=${width}`,
    seen: (id) => reports.get(id),
    candidate: (id) => candidates.get(id),
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
