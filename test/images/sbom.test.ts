/**
 * The images' SBOM (docs/helm.md "The images"): scripts/images/sbom.mjs writes CycloneDX 1.6 JSON
 * from a root filesystem's dpkg database and an app folder's node_modules, as every stage of the
 * Dockerfile runs it. Here it runs on this machine (Chromium installed by scripts/setup.sh) and this
 * checkout: the document is valid against CycloneDX's schema and names Chromium, Node and every
 * production npm package of the lockfile; the check finds what is missing or malformed.
 * scripts/build-images.sh runs the same check on each image's SBOM.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../helm.ts';

interface Component { type: string; name: string; version: string; purl: string; group?: string }
interface Bom { bomFormat: string; specVersion: string; serialNumber: string; components: Component[]; metadata: { component: { name: string } } }
const tool = (await import(path.join(ROOT, 'scripts/images/sbom.mjs'))) as {
  sbom(root: string, app: string, name: string, version: string): Bom;
  problems(bom: unknown, expectedNpm?: string[]): Promise<string[]>;
  productionPackages(lock: unknown): string[];
};
const lock: unknown = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8'));
const production = tool.productionPackages(lock);
const bom = tool.sbom('/', ROOT, 'tintype-test', '0.0.0');

t.test('valid CycloneDX, naming Chromium, Node and every production npm package', async (t) => {
  t.ok(production.length > 100, `${production.length} production packages in the lockfile`);
  t.ok(production.includes('better-sqlite3@13.2.0') && production.includes('@opentelemetry/sdk-node@0.223.0'));
  t.same(await tool.problems(bom, production), [], 'no problem');
  t.match(bom, { bomFormat: 'CycloneDX', specVersion: '1.6', metadata: { component: { name: 'tintype-test' } } });
  const chromium = bom.components.find((c) => c.name === 'chromium-headless-shell');
  t.match(chromium, { type: 'library', purl: /^pkg:deb\/debian\/chromium-headless-shell@/ }, 'Chromium, a Debian package with its version');
  t.match(bom.components.find((c) => c.name === 'node'), { version: process.versions.node }, 'Node, the one running');
  t.match(bom.components.find((c) => c.group === '@opentelemetry' && c.name === 'sdk-node'), { purl: 'pkg:npm/%40opentelemetry/sdk-node@0.223.0' });
});

t.test('the same content gives the same document', async (t) => {
  t.same(tool.sbom('/', ROOT, 'tintype-test', '0.0.0'), bom);
});

t.test('the check finds a package left out, a missing Node and a malformed document', async (t) => {
  const without = { ...bom, components: bom.components.filter((c) => !(c.name === 'koa' && c.purl.startsWith('pkg:npm/')) && c.name !== 'node') };
  const found = await tool.problems(without, production);
  t.ok(found.includes('Node is not named'), 'Node');
  t.ok(found.some((p) => /^npm package koa@\S+ is not named$/.test(p)), 'koa');
  const malformed = { ...bom, components: [{ ...bom.components[0], type: 'no-such-type' }, ...bom.components.slice(1)] };
  t.match((await tool.problems(malformed)).join('\n'), /^schema: \/components\/0\/type /m, 'against the schema');
});

t.test('a package not from Debian (its Origin) is named under its vendor, not as Debian', async (t) => {
  const { mkdtempSync, mkdirSync, writeFileSync, rmSync } = await import('node:fs');
  const os = await import('node:os');
  const root = mkdtempSync(path.join(os.tmpdir(), 'sbom-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(path.join(root, 'var/lib/dpkg'), { recursive: true });
  writeFileSync(path.join(root, 'var/lib/dpkg/status'), [
    'Package: libgbm1\nStatus: install ok installed\nArchitecture: amd64\nVersion: 25.0.7-2+deb13u1\n',
    'Package: tintype-no-mesa-drivers\nStatus: install ok installed\nArchitecture: all\nOrigin: tintype\nVersion: 25.0.7-2+deb13u1\nProvides: mesa-libgallium (= 25.0.7-2+deb13u1)\n',
  ].join('\n'));
  const purls = tool.sbom(root, root, 'tintype-test', '0.0.0').components.map((c) => c.purl);
  t.ok(purls.includes('pkg:deb/debian/libgbm1@25.0.7-2%2Bdeb13u1?arch=amd64'), 'a Debian package');
  t.ok(purls.includes('pkg:deb/tintype/tintype-no-mesa-drivers@25.0.7-2%2Bdeb13u1?arch=all'), 'the package the build made');
});
