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

const IMAGE_DIGESTS = ['policy.image.digest', 'guard.image.digest', 'renderer.image.digest', 'renderer.browser.image.digest', 'envoy.drain.image.digest'];

t.test('no digest: every image named in one warning, by its value', async (t) => {
  t.match(await notes([]), new RegExp(`^WARNING: ${IMAGE_DIGESTS.join(', ').replace(/\./g, '\\.')} unset:\npods run those images by their tags alone`, 'm'));
  t.match(await notes(['controller.enabled=true']), /^WARNING: .*controller\.image\.digest/m, "the operator's image too when it runs");
});

t.test('some digests: the others named', async (t) => {
  const text = await notes([`policy.image.digest=${DIGEST}`, `renderer.browser.image.digest=${DIGEST}`]);
  t.match(text, /^WARNING: guard\.image\.digest, renderer\.image\.digest, envoy\.drain\.image\.digest unset/m);
  t.match(text, `policy and the migration Job: registry.example.com/tintype-core:0.1.0@${DIGEST}`);
});

t.test('every digest: no warning, the images by digest', async (t) => {
  const text = await notes(IMAGE_DIGESTS.map((v) => `${v}=${DIGEST}`));
  t.notMatch(text, /WARNING: .*digest/);
  for (const i of ['tintype-core', 'tintype-renderer', 'tintype-browser']) t.match(text, `registry.example.com/${i}:0.1.0@${DIGEST}`);
});

t.test('one image for every role (image.perRole false): image.digest pins it', async (t) => {
  t.match(await notes(['image.perRole=false']), /^WARNING: image\.digest, renderer\.browser\.image\.digest unset/m);
  const text = await notes(['image.perRole=false', `image.digest=${DIGEST}`, `renderer.browser.image.digest=${DIGEST}`]);
  t.notMatch(text, /WARNING: .*digest/);
  t.match(text, `the guard: registry.example.com/tintype:0.1.0@${DIGEST}`);
});
