/**
 * Malformed bodies: a seeded stream of JSON bodies that are wrong in every way a client can be
 * wrong (types, huge numbers, deep nesting, `__proto__` and `constructor` keys, invalid UTF-8,
 * duplicate keys, 1 MB strings, cut or non-object JSON) against the three render operations.
 * None may be a 5xx, and the service must still render afterwards.
 */
import http from 'node:http';
import { random } from './load.ts';
import { ordinary, startPageService } from './pages.ts';

const PATHS = ['/v1/screenshot', '/v1/html-to-image', '/v1/pdf'];
const FIELDS = ['url', 'html', 'width', 'height', 'fullPage', 'format', 'quality', 'deviceScaleFactor', 'waitUntil', 'omitBackground', 'landscape', 'margin', 'pageRanges', 'scale', 'media'];
const ODD_VALUES: string[] = [
  '1e308', '-1e308', '1e999', '9007199254740993', '-0', '0.0000001', '"1"', 'true', 'null', '[]', '{}', '""',
  '"javascript:alert(1)"', '"http://127.0.0.1/"', '"\\u0000"', '"\\ud800"', '[1,2,3]', '{"a":{"b":{}}}',
];

/** One fuzzed body, as bytes (some are not valid UTF-8 or not JSON at all). */
export function fuzzBody(pick: () => number): Buffer {
  const field = (): string => FIELDS[Math.floor(pick() * FIELDS.length)]!;
  const odd = (): string => ODD_VALUES[Math.floor(pick() * ODD_VALUES.length)]!;
  switch (Math.floor(pick() * 10)) {
    case 0: // wrong types and odd numbers
      return Buffer.from(`{${Array.from({ length: 1 + Math.floor(pick() * 4) }, () => `"${field()}":${odd()}`).join(',')}}`);
    case 1: // deep nesting
      return Buffer.from('{"html":' + '['.repeat(1000 + Math.floor(pick() * 50_000)) + ']'.repeat(10) + '}');
    case 2: // prototype keys
      return Buffer.from(pick() < 0.5 ? '{"html":"<p>x</p>","__proto__":{"width":1}}' : '{"constructor":{"prototype":{"polluted":1}},"url":"https://example.com/"}');
    case 3: // invalid UTF-8 inside a string
      return Buffer.concat([Buffer.from('{"html":"'), Buffer.from([0xff, 0xfe, 0xc3, 0x28, 0xed, 0xa0, 0x80]), Buffer.from('"}')]);
    case 4: // duplicate keys, the last one wrong
      return Buffer.from(`{"html":"<p>dup</p>","width":320,"width":${odd()}}`);
    case 5: { // a 1 MB string in a field that must be short (a 1 MB `html` is a valid, slow page)
      const short = FIELDS.filter((f) => f !== 'html');
      return Buffer.from(JSON.stringify({ [short[Math.floor(pick() * short.length)]!]: 'x'.repeat(1_000_000) }));
    }
    case 6: // not an object
      return Buffer.from(['[]', '1', 'null', '"html"', 'true', ''][Math.floor(pick() * 6)]!);
    case 7: // cut short
      return Buffer.from(JSON.stringify({ html: '<p>cut</p>', width: 320 }).slice(0, 1 + Math.floor(pick() * 25)));
    case 8: // random bytes
      return Buffer.from(Array.from({ length: 1 + Math.floor(pick() * 200) }, () => Math.floor(pick() * 256)));
    default: // unknown fields beside known ones
      return Buffer.from(JSON.stringify({ html: '<p>x</p>', [`x${Math.floor(pick() * 1e6)}`]: odd() }));
  }
}

export interface FuzzFigures {
  fuzzed_bodies: number;
  fuzzed_5xx: number;
  /** Answers by status. */
  fuzzed_statuses: Record<string, number>;
  /** An ordinary render after the fuzzing was served. */
  renders_after: boolean;
}

export async function fuzzBodies(o: { bodies: number; seed: number }): Promise<FuzzFigures> {
  // The default budget: a valid body that renders must not meet 504 because the machine is busy.
  const p = await startPageService({ TINTYPE_RENDER_TIMEOUT_MS: '30000' });
  const agent = new http.Agent({ keepAlive: true, maxSockets: 2 });
  try {
    const pick = random(o.seed);
    const statuses: Record<string, number> = {};
    let sent = 0;
    const next = (): Promise<void> | undefined => {
      if (sent >= o.bodies) return undefined;
      sent += 1;
      const body = fuzzBody(pick);
      const path = PATHS[Math.floor(pick() * PATHS.length)]!;
      return new Promise<void>((resolve) => {
        const req = http.request(
          { host: '127.0.0.1', port: p.svc.port, method: 'POST', path, agent, headers: { authorization: `Bearer ${p.key}`, 'content-type': 'application/json', 'content-length': body.length } },
          (res) => {
            res.resume();
            res.on('end', () => {
              statuses[String(res.statusCode)] = (statuses[String(res.statusCode)] ?? 0) + 1;
              resolve();
            });
          },
        );
        req.on('error', () => {
          statuses['no answer'] = (statuses['no answer'] ?? 0) + 1;
          resolve();
        });
        req.end(body);
      });
    };
    // Two at a time: the key may hold two renders, so a body that happens to be valid renders
    // rather than meeting 503 `busy`.
    await Promise.all([0, 1].map(async () => {
      for (let r = next(); r !== undefined; r = next()) await r;
    }));
    const after = await p.render('/v1/html-to-image', ordinary());
    const fivexx = Object.entries(statuses).filter(([s]) => s.startsWith('5')).reduce((n, [, c]) => n + c, 0);
    return { fuzzed_bodies: sent, fuzzed_5xx: fivexx, fuzzed_statuses: statuses, renders_after: after.status === 200 };
  } finally {
    agent.destroy();
    await p.close();
  }
}
