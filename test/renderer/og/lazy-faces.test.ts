/**
 * Faces are read on first need (memory): warm-up reads the three primary faces, a Latin card
 * reads no other face, a CJK card reads the CJK face when it is drawn, a Devanagari card the
 * Devanagari face. This file runs in its own process, so the faces start unread.
 */
import t from 'tap';
import { faces } from '../../../renderer/og/typeset/faces.ts';
import { paintPixels, warmUp } from '../../../renderer/og/draw.ts';
import { SCRIPTS, fullCard } from '../../../renderer/og/samples.ts';

const read = () => faces().all().filter((f) => f.font.loaded).map((f) => f.name).sort();

t.test('warm-up reads the primary faces only; a Latin card reads no other face', async (t) => {
  t.same(read(), [], 'nothing is read before the first use');
  warmUp();
  const primary = ['NotoSans-Bold', 'NotoSans-Regular', 'NotoSansMono-Bold'];
  t.same(read(), primary);
  for (const template of ['title', 'stat', 'board'] as const) paintPixels(fullCard(template, 'dark', SCRIPTS.latin!));
  t.same(read(), primary);
});

t.test('the first CJK or Devanagari card reads its face and draws with it', async (t) => {
  const cjk = faces().all().find((f) => f.name === 'DroidSansFallbackFull')!;
  t.notOk(cjk.font.loaded);
  const { regions } = paintPixels(fullCard('title', 'dark', SCRIPTS.cjk!));
  t.ok(regions.title, 'the title was drawn');
  t.ok(cjk.font.loaded, 'the CJK face was read for it');
  const deva = faces().all().filter((f) => f.name.startsWith('NotoSansDevanagari'));
  t.ok(deva.length > 0 && deva.every((f) => !f.font.loaded));
  paintPixels(fullCard('title', 'dark', SCRIPTS.devanagari!));
  t.ok(deva.some((f) => f.font.loaded), 'a Devanagari face was read for the Devanagari card');
  t.notOk(read().some((n) => n.startsWith('NotoSansTelugu')), 'no face of a script the cards did not use');
});
