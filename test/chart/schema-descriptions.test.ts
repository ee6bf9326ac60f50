/**
 * values.schema.json describes every value it declares (docs/helm.md, "The values that matter"):
 * each description names the value by its dotted path and says what it must be, so an editor's
 * hint, the chart's README and a refused value's path all lead to the same words.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { CHART } from '../helm.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

function* declared(node: any, at: string): Generator<[string, any]> {
  for (const [k, v] of Object.entries<any>(node?.properties ?? {})) {
    const name = at ? `${at}.${k}` : k;
    yield [name, v];
    yield* declared(v, name);
  }
}

t.test('every value has a description that names it', async (t) => {
  const schema = JSON.parse(readFileSync(path.join(CHART, 'values.schema.json'), 'utf8'));
  const missing: string[] = [];
  let n = 0;
  for (const [name, v] of declared(schema, '')) {
    n++;
    if (typeof v.description !== 'string' || !v.description.includes(name)) missing.push(name);
  }
  t.ok(n > 300, `${n} values`);
  t.same(missing, [], 'values whose description does not name them');
});
