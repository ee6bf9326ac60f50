/** GET /v1/ping (spec 4.1, 2.3): `{ pong: true, app, version }`, the version of package.json. */
import { readFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

export interface PingBody {
  pong: true;
  app: string;
  version: string;
}

export const APP_NAME = 'tintype';

export function ping(): PingBody {
  return { pong: true, app: APP_NAME, version: pkg.version };
}
