/**
 * The rendered manifests of every ci values file are committed under test/chart/golden/, so a
 * template change shows in review as a change of what a cluster receives. After a deliberate
 * change: CHART_UPDATE_GOLDENS=1 npx tap test/chart/golden.test.ts, and review the diff.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { CI_VALUES, ROOT, renderText } from '../helm.ts';

const GOLDEN = path.join(ROOT, 'test/chart/golden');
const update = process.env['CHART_UPDATE_GOLDENS'] === '1';

for (const values of CI_VALUES) {
  t.test(`${values}: rendered manifests match the golden file`, async (t) => {
    const rendered = await renderText(values);
    const file = path.join(GOLDEN, values);
    if (update) {
      mkdirSync(GOLDEN, { recursive: true });
      writeFileSync(file, rendered);
    }
    t.ok(existsSync(file), `${path.relative(ROOT, file)} exists (CHART_UPDATE_GOLDENS=1 writes it)`);
    const golden = readFileSync(file, 'utf8');
    if (rendered === golden) return t.pass('identical');
    // The first differing line, so a failure says where.
    const a = golden.split('\n');
    const b = rendered.split('\n');
    const i = a.findIndex((line, n) => line !== b[n]);
    t.fail(`differs from line ${i + 1}: golden ${JSON.stringify(a[i])}, rendered ${JSON.stringify(b[i])}`);
  });
}
