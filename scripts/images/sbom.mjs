// The SBOM of an image (docs/helm.md "The images"): CycloneDX 1.6 JSON naming every Debian package
// dpkg holds (with version and architecture), Node (the one running this script, the image's own)
// and every npm package under APP/node_modules (with version), each with its package URL.
// Deterministic: the same content gives the same bytes, so a rebuild that changed nothing keeps
// the layer. Node's own modules only, so it runs inside any image of the Dockerfile.
//
//   node sbom.mjs write ROOT APP NAME VERSION > sbom.cdx.json    # as the Dockerfile runs it
//   node sbom.mjs check [--lock package-lock.json] SBOM...       # schema and contents (needs the dev packages)
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** Installed packages of a dpkg status file: name, version, architecture, and the vendor when it is not Debian (Origin). */
export function debianPackages(root) {
  const status = path.join(root, 'var/lib/dpkg/status');
  if (!existsSync(status)) return [];
  return readFileSync(status, 'utf8').split(/\n\n+/).map((stanza) => {
    const field = (name) => new RegExp(`^${name}: (.*)$`, 'm').exec(stanza)?.[1];
    return { name: field('Package'), version: field('Version'), arch: field('Architecture'), status: field('Status'), origin: field('Origin') };
  }).filter((p) => p.name !== undefined && p.status === 'install ok installed');
}

/**
 * Every package installed under a node_modules folder, nested ones included: its name and its
 * folder (a folder without package.json is not a package). Also read by crossgrade.mjs.
 */
export function* installedPackages(nodeModules) {
  if (!existsSync(nodeModules)) return;
  for (const entry of readdirSync(nodeModules)) {
    if (entry.startsWith('.')) continue;
    const names = entry.startsWith('@') ? readdirSync(path.join(nodeModules, entry)).map((n) => `${entry}/${n}`) : [entry];
    for (const name of names) {
      const dir = path.join(nodeModules, name);
      if (!existsSync(path.join(dir, 'package.json'))) continue;
      yield { name, dir };
      yield* installedPackages(path.join(dir, 'node_modules'));
    }
  }
}

/** Every package under a node_modules folder, nested ones included, by name and version. */
export function npmPackages(app) {
  return [...installedPackages(path.join(app, 'node_modules'))].map(({ name, dir }) =>
    ({ name, version: JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')).version }));
}

/** Every production package of a lockfile (v3), as name@version. */
export function productionPackages(lock) {
  // An optional package for another platform is not installed.
  const here = (p) => (p.os === undefined || p.os.includes(process.platform)) && (p.cpu === undefined || p.cpu.includes(process.arch));
  return [...new Set(Object.entries(lock.packages).filter(([where, p]) => where !== '' && p.dev !== true && p.link !== true && (p.optional !== true || here(p)))
    .map(([where, p]) => `${p.name ?? where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length)}@${p.version}`))];
}

const npmPurl = (name, version) => `pkg:npm/${name.replace('@', '%40')}@${version}`;

/** The CycloneDX document for a root filesystem and its app folder. */
export function sbom(root, app, name, version) {
  const debs = debianPackages(root);
  const distro = /^VERSION_ID="?([^"\n]+)/m.exec(existsSync(path.join(root, 'etc/os-release')) ? readFileSync(path.join(root, 'etc/os-release'), 'utf8') : '')?.[1];
  const components = new Map();
  const add = (c) => components.set(c.purl, { 'bom-ref': c.purl, ...c });
  // Node from the npm package node-linux-<arch>, unpacked into /usr/local (scripts/build-images.sh).
  add({ type: 'platform', name: 'node', version: process.versions.node, purl: `pkg:generic/node@${process.versions.node}`, description: 'Node.js runtime' });
  for (const d of debs) {
    add({ type: 'library', name: d.name, version: d.version, purl: `pkg:deb/${(d.origin ?? 'debian').toLowerCase()}/${d.name}@${encodeURIComponent(d.version)}?arch=${d.arch}${distro === undefined ? '' : `&distro=debian-${distro}`}` });
  }
  for (const p of npmPackages(app)) {
    const [group, short] = p.name.startsWith('@') ? p.name.split('/') : [undefined, p.name];
    add({ type: 'library', ...(group === undefined ? {} : { group }), name: short, version: p.version, purl: npmPurl(p.name, p.version) });
  }
  const sorted = [...components.values()].sort((a, b) => (a.purl < b.purl ? -1 : 1));
  const hash = createHash('sha256').update(JSON.stringify([name, version, sorted])).digest('hex');
  const uuid = `${hash.slice(0, 8)}-${hash.slice(8, 12)}-5${hash.slice(13, 16)}-8${hash.slice(17, 20)}-${hash.slice(20, 32)}`;
  return {
    bomFormat: 'CycloneDX',
    specVersion: '1.6',
    serialNumber: `urn:uuid:${uuid}`,
    version: 1,
    metadata: {
      tools: { components: [{ type: 'application', name: 'tintype scripts/images/sbom.mjs' }] },
      component: { type: 'container', 'bom-ref': `tintype-image:${name}`, name, version },
    },
    components: sorted,
  };
}

/**
 * What is wrong with an SBOM: its schema's complaints (CycloneDX 1.6, the schema the
 * @cyclonedx/cyclonedx-library development package carries, checked with ajv), a missing Node, and
 * each npm package of `expectedNpm` (name@version) it does not name. Empty when it is right.
 */
export async function problems(bom, expectedNpm = []) {
  const { default: Ajv } = await import('ajv');
  const { default: addFormats } = await import('ajv-formats');
  const schemas = path.join(path.dirname(new URL(import.meta.resolve('@cyclonedx/cyclonedx-library/package.json')).pathname), 'res/schema');
  const load = (file) => JSON.parse(readFileSync(path.join(schemas, file), 'utf8'));
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  // A format ajv-formats has no check for (internationalised URLs): accepted as written.
  ajv.addFormat('iri-reference', true);
  // The schemas it refers to, under the names it refers to them by.
  for (const file of ['spdx.SNAPSHOT.schema.json', 'jsf-0.82.SNAPSHOT.schema.json', 'cryptography-defs.SNAPSHOT.schema.json']) {
    ajv.addSchema({ ...load(file), $id: `http://cyclonedx.org/schema/${file}` });
  }
  const validate = ajv.compile(load('bom-1.6.SNAPSHOT.schema.json'));
  const out = validate(bom) ? [] : (validate.errors ?? []).map((e) => `schema: ${e.instancePath} ${e.message}`);
  const components = bom.components ?? [];
  if (!components.some((c) => c.name === 'node' && /^\d+\.\d+\.\d+$/.test(c.version ?? ''))) out.push('Node is not named');
  const named = new Set(components.filter((c) => c.purl?.startsWith('pkg:npm/')).map((c) => `${c.group === undefined ? '' : `${c.group}/`}${c.name}@${c.version}`));
  for (const p of expectedNpm) if (!named.has(p)) out.push(`npm package ${p} is not named`);
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [mode, ...args] = process.argv.slice(2);
  if (mode === 'write') {
    const [root, app, name, version] = args;
    process.stdout.write(`${JSON.stringify(sbom(root, app, name, version), null, 1)}\n`);
  } else if (mode === 'check') {
    // --lock FILE: every production package of that lockfile must be named.
    const lock = args[0] === '--lock' ? JSON.parse(readFileSync(args[1], 'utf8')) : undefined;
    const files = lock === undefined ? args : args.slice(2);
    const expected = lock === undefined ? [] : productionPackages(lock);
    let failed = false;
    for (const file of files) {
      const found = await problems(JSON.parse(readFileSync(file, 'utf8')), expected);
      for (const p of found) console.error(`sbom: ${file}: ${p}`);
      failed ||= found.length > 0;
    }
    process.exit(failed ? 1 : 0);
  } else {
    console.error('usage: sbom.mjs write ROOT APP NAME VERSION | check [--lock package-lock.json] SBOM...');
    process.exit(2);
  }
}
