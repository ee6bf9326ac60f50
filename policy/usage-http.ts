/**
 * `GET /usage?month=YYYY-MM[&key=ID]` on the admin socket (lib/admin.ts), never on a port callers
 * or renderers reach, nor on the admin port unless TINTYPE_POLICY_USAGE_OPEN puts it there
 * (docs/operations.md "Reading usage"): the report as JSON, the same document as
 * `tintype usage --format json`. Bad input is 400 (404 for an unknown key) with a message; a
 * store that cannot answer is 503 `busy`. One report is read at a time: a month of millions
 * of records takes seconds, and a second one asked meanwhile is told to come back.
 */
import type http from 'node:http';
import { drain } from '../lib/body.ts';
import type { Logger } from '../lib/log.ts';
import { type Clock, monthOf } from './calendar.ts';
import type { Plans } from './plans.ts';
import { type UsageReader, readUsage } from './usage-reader.ts';
import { UsageInputError, parseKeyId, parseMonth } from './usage-report.ts';
import { toJson } from './usage-format.ts';

export const USAGE_PATH = '/usage';

export interface UsageHandlerOptions {
  reader: UsageReader;
  plans: Plans;
  clock: Clock;
  logger: Logger;
}

function send(res: http.ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store',
    'content-length': String(Buffer.byteLength(body)), ...headers,
  });
  res.end(body);
}

/** Answers GET /usage; the caller routes only that path here. */
export function usageHandler(o: UsageHandlerOptions): http.RequestListener {
  let reading = false;
  return (req, res) => {
    drain(req);
    if (req.method !== 'GET') return send(res, 405, JSON.stringify({ error: 'method_not_allowed' }), { allow: 'GET' });
    const query = new URLSearchParams((req.url ?? '').split('?')[1] ?? '');
    let month: string;
    let keyId: string | undefined;
    try {
      for (const name of query.keys()) {
        if (name !== 'month' && name !== 'key') throw new UsageInputError(`unknown parameter "${name.slice(0, 40)}" (month, key)`);
      }
      month = parseMonth(query.get('month') ?? monthOf(o.clock()));
      const k = query.get('key');
      keyId = k === null ? undefined : parseKeyId(k);
    } catch (err) {
      return answerError(res, err);
    }
    if (reading) return send(res, 503, JSON.stringify({ error: 'busy' }), { 'retry-after': '1' });
    reading = true;
    const t0 = performance.now();
    readUsage(o.reader, o.plans, month, keyId === undefined ? {} : { keyId })
      .then((report) => {
        o.logger.info('usage.read', { month, keys: report.keys.length, duration_ms: Math.round(performance.now() - t0) });
        send(res, 200, toJson(report));
      })
      .catch((err: unknown) => answerError(res, err, o.logger))
      .finally(() => {
        reading = false;
      });
  };
}

function answerError(res: http.ServerResponse, err: unknown, logger?: Logger): void {
  if (err instanceof UsageInputError) {
    return send(res, err.code === 'unknown_key' ? 404 : 400, JSON.stringify({ error: err.code === 'unknown_key' ? 'not_found' : 'bad_request', message: err.message.replace('--month', 'month') }));
  }
  logger?.warn('store_unavailable', { during: 'usage', message: err instanceof Error ? err.message : String(err) });
  send(res, 503, JSON.stringify({ error: 'busy' }), { 'retry-after': '1' });
}
