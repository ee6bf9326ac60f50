/**
 * The chart's NOTES warn when it runs an image by tag without a digest (docs/helm.md "The images"):
 * nodes pulling one tag at different times may run different bytes.
 */
import t from 'tap';
import path from 'node:path';
import { CHART, helm, NAMESPACE, RELEASE } from '../helm.ts';

const DIGEST = `sha256:${'a'.repeat(64)}`;

async function notes(set: string[]): Promise<string> {
  const r = await helm(['install', RELEASE, CHART, '-n', NAMESPACE, '--dry-run=client', '-f', path.join(CHART, 'ci/default-values.yaml'), ...set.flatMap((s) => ['--set', s])]);
  if (r.code !== 0) throw new Error(r.stderr);
  return r.stdout.slice(r.stdout.indexOf('NOTES:'));
}

t.test('no digest: both images named in a warning', async (t) => {
  t.match(await notes([]), /^WARNING: image\.digest and renderer\.browser\.image\.digest unset: pods run\nthat image by its tag alone/m);
});

t.test('one digest: the other image named', async (t) => {
  t.match(await notes([`image.digest=${DIGEST}`]), /^WARNING: renderer\.browser\.image\.digest unset/m);
  t.match(await notes([`renderer.browser.image.digest=${DIGEST}`]), /^WARNING: image\.digest unset/m);
});

t.test('both digests: no warning, the images by digest', async (t) => {
  const text = await notes([`image.digest=${DIGEST}`, `renderer.browser.image.digest=${DIGEST}`]);
  t.notMatch(text, /WARNING: .*digest/);
  t.match(text, `registry.example.com/tintype:0.1.0@${DIGEST}`);
});
