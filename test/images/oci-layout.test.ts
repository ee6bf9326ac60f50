/**
 * The OCI image layout's index over both architectures and its garbage collection
 * (scripts/images/oci-layout.mjs; docs/helm.md "The images", Other architectures), on a layout of
 * small images made here: the index names each image with the platform its config says, under
 * digests and sizes that are its bytes'; a second index of that name replaces the first; two images
 * of one platform are refused; gc keeps what index.json reaches, through indexes, and nothing else.
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../helm.ts';

const SCRIPT = path.join(ROOT, 'scripts/images/oci-layout.mjs');
const REF = 'org.opencontainers.image.ref.name';
const MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const INDEX = 'application/vnd.oci.image.index.v1+json';

type Descriptor = { mediaType: string; digest: string; size: number; annotations?: Record<string, string>; platform?: Record<string, string> };

const sha = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/** A layout with one image per architecture given: a layer, a config naming the architecture, a manifest. */
function layout(arches: Record<string, string>): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-oci-'));
  mkdirSync(path.join(dir, 'blobs/sha256'), { recursive: true });
  writeFileSync(path.join(dir, 'oci-layout'), '{"imageLayoutVersion":"1.0.0"}');
  const put = (body: Buffer): Descriptor => {
    const digest = sha(body);
    writeFileSync(path.join(dir, 'blobs', digest.replace(':', '/')), body);
    return { mediaType: '', digest, size: body.length };
  };
  const manifests: Descriptor[] = [];
  for (const [name, arch] of Object.entries(arches)) {
    const layer = put(Buffer.from(`layer of ${name}`));
    const config = put(Buffer.from(JSON.stringify({ architecture: arch, os: 'linux', rootfs: { type: 'layers', diff_ids: [layer.digest] } })));
    const manifest = put(Buffer.from(JSON.stringify({
      schemaVersion: 2, mediaType: MANIFEST,
      config: { ...config, mediaType: 'application/vnd.oci.image.config.v1+json' },
      layers: [{ ...layer, mediaType: 'application/vnd.oci.image.layer.v1.tar' }],
    })));
    manifests.push({ ...manifest, mediaType: MANIFEST, annotations: { [REF]: name } });
  }
  writeFileSync(path.join(dir, 'index.json'), JSON.stringify({ schemaVersion: 2, manifests }));
  return dir;
}

const run = (...args: string[]) => spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8' });
const top = (dir: string): Descriptor[] => JSON.parse(readFileSync(path.join(dir, 'index.json'), 'utf8')).manifests;
const blob = (dir: string, digest: string): Buffer => readFileSync(path.join(dir, 'blobs', digest.replace(':', '/')));

t.test('an index over an amd64 and an arm64 image names each with its platform, by its bytes', async (t) => {
  const dir = layout({ core: 'amd64', 'core-arm64': 'arm64' });
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const r = run('index', dir, 'core-multiarch', 'core', 'core-arm64');
  t.equal(r.status, 0, r.stderr);
  const digest = r.stdout.trim();
  const named = top(dir).find((m) => m.annotations?.[REF] === 'core-multiarch');
  t.ok(named, 'index.json names the index');
  t.equal(named?.digest, digest, 'the printed digest is the one index.json names');
  t.equal(named?.mediaType, INDEX);
  const body = blob(dir, digest);
  t.equal(sha(body), digest, 'the blob is stored under its own digest');
  t.equal(named?.size, body.length, 'and its size');
  const index = JSON.parse(body.toString());
  t.equal(index.schemaVersion, 2);
  t.equal(index.mediaType, INDEX);
  const images = Object.fromEntries(top(dir).filter((m) => m.mediaType === MANIFEST).map((m) => [m.annotations?.[REF], m]));
  t.same(index.manifests, [
    { mediaType: MANIFEST, digest: images['core']!.digest, size: images['core']!.size, platform: { architecture: 'amd64', os: 'linux' } },
    { mediaType: MANIFEST, digest: images['core-arm64']!.digest, size: images['core-arm64']!.size, platform: { architecture: 'arm64', os: 'linux', variant: 'v8' } },
  ], 'each image once, with the platform its config says');

  const again = run('index', dir, 'core-multiarch', 'core-arm64', 'core');
  t.equal(again.status, 0, again.stderr);
  t.equal(top(dir).filter((m) => m.annotations?.[REF] === 'core-multiarch').length, 1, 'a second index of that name replaces the first');
  t.equal(top(dir).find((m) => m.annotations?.[REF] === 'core-multiarch')?.digest, again.stdout.trim());
});

t.test('an index is refused for two images of one platform, a missing image or too few arguments', async (t) => {
  const dir = layout({ a: 'amd64', b: 'amd64' });
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const before = readFileSync(path.join(dir, 'index.json'), 'utf8');
  const same = run('index', dir, 'ab', 'a', 'b');
  t.not(same.status, 0);
  t.match(same.stderr, /two images of ab for one platform/);
  const missing = run('index', dir, 'ax', 'a', 'x');
  t.not(missing.status, 0);
  t.match(missing.stderr, /no image named x/);
  t.equal(run('index', dir, 'only-a-name').status, 2, 'usage');
  t.equal(readFileSync(path.join(dir, 'index.json'), 'utf8'), before, 'index.json unchanged by the refusals');
});

t.test('gc keeps every blob reached from index.json, through an index, and removes the rest', async (t) => {
  const dir = layout({ core: 'amd64', 'core-arm64': 'arm64', old: 'amd64' });
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const index = run('index', dir, 'core-multiarch', 'core', 'core-arm64').stdout.trim();
  const all = (): string[] => readdirSync(path.join(dir, 'blobs/sha256')).map((f) => `sha256:${f}`).sort();
  const arm = top(dir).find((m) => m.annotations?.[REF] === 'core-arm64')!;
  const armManifest = JSON.parse(blob(dir, arm.digest).toString());
  const old = top(dir).find((m) => m.annotations?.[REF] === 'old')!;
  const oldManifest = JSON.parse(blob(dir, old.digest).toString());
  // The arm64 image is named only through the index now; the old image not at all.
  writeFileSync(path.join(dir, 'index.json'), JSON.stringify({
    schemaVersion: 2, manifests: top(dir).filter((m) => !['core-arm64', 'old'].includes(m.annotations?.[REF] ?? '')),
  }));
  const before = all();
  t.equal(run('gc', dir).status, 0);
  const after = all();
  for (const d of [index, arm.digest, armManifest.config.digest, armManifest.layers[0].digest]) {
    t.ok(after.includes(d), `kept, reached through the index: ${d.slice(0, 19)}`);
  }
  const gone = [old.digest, oldManifest.config.digest, oldManifest.layers[0].digest];
  for (const d of gone) t.notOk(after.includes(d), `removed, named by nothing: ${d.slice(0, 19)}`);
  t.same(after, before.filter((d) => !gone.includes(d)), 'nothing else removed');
  t.ok(existsSync(path.join(dir, 'oci-layout')));
});
