/**
 * Hostile pages, each its own render, with an ordinary render on the other slot at the same time
 * and another one after it: each hostile page answers as docs/operations.md "What it survives" says, and neither ordinary
 * render is disturbed (a bounded renderer, not a lucky one).
 */
import { ordinary, startPageService, type PageService } from './pages.ts';

export interface Hostile {
  name: string;
  path: string;
  body: (p: PageService) => object;
  /** The answers that count as handled. */
  expected: Array<{ status: number; error?: string }>;
}

const page = (body: string): object => ({ html: `<!doctype html><html><body>${body}</body></html>`, width: 320, height: 200 });

/** The pages of docs/operations.md "What it survives" table. */
export const HOSTILE: Hostile[] = [
  {
    name: 'allocates memory without end',
    path: '/v1/html-to-image',
    body: () => page('<script>const a = []; for (;;) a.push(new Array(1 << 20).fill(Math.random()));</script>'),
    // The page's process dies when V8's heap is spent (or Chromium is replaced on its memory bound):
    // 502 render_failed; where allocating is slower than the render budget (a busy machine) the
    // budget ends it first: 504 render_timeout. Both are the README's answers for this page.
    expected: [{ status: 502, error: 'render_failed' }, { status: 504, error: 'render_timeout' }],
  },
  {
    name: 'loops forever in script',
    path: '/v1/html-to-image',
    body: () => page('<script>for (;;) {}</script>'),
    expected: [{ status: 504, error: 'render_timeout' }],
  },
  {
    name: 'opens 1,000 sub-resources',
    path: '/v1/html-to-image',
    body: (p) => page(Array.from({ length: 1000 }, (_, i) => `<img width=1 height=1 src="${p.site.base}/img.png?${i}">`).join('')),
    expected: [{ status: 200 }],
  },
  {
    name: 'redirects 50 times',
    path: '/v1/screenshot',
    body: (p) => ({ url: `${p.site.base}/redirect/50`, width: 320, height: 200 }),
    // Chromium gives up after 20 redirects: the page cannot be rendered as asked.
    expected: [{ status: 502, error: 'render_failed' }],
  },
  {
    name: 'opens 100 popups and a busy worker per core',
    path: '/v1/html-to-image',
    body: () =>
      page(
        '<h1>popups</h1><script>for (let i = 0; i < 100; i++) window.open("about:blank");' +
          'for (let i = 0; i < navigator.hardwareConcurrency; i++) new Worker(URL.createObjectURL(new Blob(["for (;;) {}"])));</script>',
      ),
    expected: [{ status: 200 }],
  },
  {
    name: 'prints a 10,000-page PDF',
    path: '/v1/pdf',
    body: () => ({ html: '<div style="page-break-after: always">page</div>'.repeat(10_000) }),
    // Within the output bound it is a PDF; past it 502 render_too_large; past the render budget
    // 504 render_timeout (printing 10,000 pages takes Chromium longer than 30 s); never a killed process.
    expected: [{ status: 200 }, { status: 502, error: 'render_too_large' }, { status: 504, error: 'render_timeout' }],
  },
];

/** Whether `answer` is one of the answers the README gives for hostile page `h`. */
export function answeredAsSaid(h: Hostile, answer: { status: number; error?: string }): boolean {
  return h.expected.some((e) => e.status === answer.status && e.error === answer.error);
}

export interface HostileFigures {
  hostile_pages: number;
  hostile_pages_ok: number;
  /** What each page answered and whether the renders beside and after it were served. */
  hostile_results: Array<{ name: string; status: number; error?: string; beside: number; after: number }>;
}

export async function hostilePages(): Promise<HostileFigures> {
  // The default render budget: a hostile page must be bounded by the renderer, not by a short budget.
  const p = await startPageService({ TINTYPE_RENDER_TIMEOUT_MS: '30000' });
  try {
    const results: HostileFigures['hostile_results'] = [];
    let ok = 0;
    for (const h of HOSTILE) {
      const hostile = p.render(h.path, h.body(p));
      const beside = await p.render('/v1/html-to-image', ordinary());
      const answer = await hostile;
      const after = await p.render('/v1/html-to-image', ordinary());
      if (answeredAsSaid(h, answer) && beside.status === 200 && after.status === 200) ok += 1;
      results.push({ name: h.name, ...answer, beside: beside.status, after: after.status });
    }
    return { hostile_pages: HOSTILE.length, hostile_pages_ok: ok, hostile_results: results };
  } finally {
    await p.close();
  }
}
