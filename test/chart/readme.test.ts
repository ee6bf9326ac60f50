/**
 * charts/tintype/README.md is what scripts/chart-readme.ts makes of values.yaml's comments and
 * values.schema.json's descriptions: regenerate it (`node --import tsx scripts/chart-readme.ts`)
 * with every change of a value, and it names every value the chart has.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { chartReadme } from '../../scripts/chart-readme.ts';
import { CHART } from '../helm.ts';

t.test('the chart README is current', async (t) => {
  const made = chartReadme();
  t.equal(readFileSync(path.join(CHART, 'README.md'), 'utf8'), made, 'run: node --import tsx scripts/chart-readme.ts');
  for (const name of ['image.perRole', 'renderer.browser.seccompProfile.operator.enabled', 'telemetry.caSecret.key', 'monitoring.prometheusRule.alerts.TintypeBusy.threshold']) {
    t.match(made, `| \`${name}\` |`, name);
  }
});
