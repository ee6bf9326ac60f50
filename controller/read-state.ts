/** Reads one renderer's `/state` (lib/state-contract.ts), bounded in time and size. */
import http from 'node:http';
import { parseStateReport, STATE_PATH, type RendererStateReport } from '../lib/state-contract.ts';

/** A state report is a few dozen bytes; anything past this is not one. */
const MAX_STATE_BYTES = 4096;

/** The report, or undefined when the pod did not answer a well-formed one within `timeoutMs`. */
export type StateReader = (adminBase: string) => Promise<RendererStateReport | undefined>;

export function httpStateReader(timeoutMs: number): StateReader {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  return (adminBase) =>
    new Promise((resolve) => {
      const req = http.get(`${adminBase}${STATE_PATH}`, { agent, timeout: timeoutMs }, (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_STATE_BYTES) req.destroy();
          else chunks.push(c);
        });
        res.on('error', () => resolve(undefined));
        res.on('end', () => {
          if (res.statusCode !== 200) return resolve(undefined);
          try {
            resolve(parseStateReport(JSON.parse(Buffer.concat(chunks).toString('utf8'))));
          } catch {
            resolve(undefined);
          }
        });
      });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(undefined));
      req.on('close', () => resolve(undefined));
    });
}
