// The OCI image layout scripts/build-images.sh writes ($OUT/oci; docs/helm.md "The images"):
//
//   node scripts/images/oci-layout.mjs index LAYOUT NAME REF...   # prints the index's digest
//   node scripts/images/oci-layout.mjs gc LAYOUT
//
// index: one OCI image index named NAME over the images named REF... (the same target built for
// each architecture), each entry with the platform its own config says, so a registry serves a
// node the image of its architecture under one tag (`skopeo copy --all oci:LAYOUT:NAME docker://…`).
// Written as a blob, named in index.json (a previous entry of that name replaced).
// gc: removes every blob that nothing named in index.json reaches (a previous run's layers),
// following indexes to their images and images to their configs and layers.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';

const REF = 'org.opencontainers.image.ref.name';
const INDEX = 'application/vnd.oci.image.index.v1+json';

const blobPath = (layout, digest) => `${layout}/blobs/${digest.replace(':', '/')}`;
const readJson = (file) => JSON.parse(readFileSync(file, 'utf8'));
const readIndex = (layout) => readJson(`${layout}/index.json`);

/** The platform an image's config names: its architecture, OS and variant (arm64's v8 when it names none). */
function platformOf(layout, manifest) {
  const config = readJson(blobPath(layout, manifest.config.digest));
  const platform = { architecture: config.architecture, os: config.os };
  const variant = config.variant ?? (config.architecture === 'arm64' ? 'v8' : undefined);
  if (variant !== undefined) platform.variant = variant;
  return platform;
}

function index(layout, name, refs) {
  const top = readIndex(layout);
  const manifests = refs.map((ref) => {
    const d = top.manifests.find((m) => m.annotations?.[REF] === ref);
    if (d === undefined) throw new Error(`oci-layout: no image named ${ref} in ${layout}`);
    if (d.mediaType === INDEX) throw new Error(`oci-layout: ${ref} is an index, not an image`);
    return { mediaType: d.mediaType, digest: d.digest, size: d.size, platform: platformOf(layout, readJson(blobPath(layout, d.digest))) };
  });
  const seen = new Set(manifests.map((m) => `${m.platform.os}/${m.platform.architecture}/${m.platform.variant ?? ''}`));
  if (seen.size !== manifests.length) throw new Error(`oci-layout: two images of ${name} for one platform`);
  const body = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: INDEX, manifests }));
  const digest = `sha256:${createHash('sha256').update(body).digest('hex')}`;
  writeFileSync(blobPath(layout, digest), body);
  top.manifests = top.manifests.filter((m) => m.annotations?.[REF] !== name);
  top.manifests.push({ mediaType: INDEX, digest, size: body.length, annotations: { [REF]: name } });
  writeFileSync(`${layout}/index.json`, JSON.stringify(top));
  return digest;
}

function gc(layout) {
  const keep = new Set();
  const reach = (d) => {
    keep.add(d.digest);
    const body = readJson(blobPath(layout, d.digest));
    if (d.mediaType === INDEX || body.mediaType === INDEX) {
      for (const m of body.manifests) reach(m);
      return;
    }
    keep.add(body.config.digest);
    for (const l of body.layers) keep.add(l.digest);
  };
  for (const d of readIndex(layout).manifests) reach(d);
  let removed = 0;
  for (const f of readdirSync(`${layout}/blobs/sha256`)) {
    if (keep.has(`sha256:${f}`)) continue;
    rmSync(`${layout}/blobs/sha256/${f}`);
    removed++;
  }
  return removed;
}

const [command, layout, ...rest] = process.argv.slice(2);
if (command === 'index' && layout !== undefined && rest.length >= 2) console.log(index(layout, rest[0], rest.slice(1)));
else if (command === 'gc' && layout !== undefined && rest.length === 0) gc(layout);
else {
  console.error('usage: oci-layout.mjs index LAYOUT NAME REF... | gc LAYOUT');
  process.exit(2);
}
