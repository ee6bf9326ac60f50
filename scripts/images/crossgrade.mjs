// An image's root filesystem for another architecture, made without running that architecture's
// code (docs/helm.md "The images", Other architectures): a copy of the unpacked image in which every Debian
// package of the build's architecture is replaced by the same version for the other (its files
// removed, the other's .deb unpacked, dpkg's database rewritten to it), Node by the npm package
// node-linux-<arch> of the same version, and each npm package's prebuilt binary for this machine
// (prebuilds/linux-x64.node) by the other platform's from the same package. What maintainer
// scripts made at install (users, alternatives, certificates, font caches) is kept from the image:
// none of it depends on the architecture but ld.so's cache, which is removed (the loader then
// searches Debian's multiarch directories itself). Fails when an ELF file of another
// architecture is left.
//
//   node crossgrade.mjs FROM TO ARCH DEBS NPM-CACHE
// FROM: the unpacked image, with FROM.config.json beside it (scripts/build-images.sh writes both);
// TO: made anew; ARCH: Debian's name (arm64, amd64); DEBS: a folder holding
// <name>_<version>_<arch>.deb of every package to replace, at the same version or a binary-only
// rebuild of it (+bN, which Debian makes per architecture); NPM-CACHE: where npm packages are
// packed (and kept for the next run).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { closeSync, copyFileSync, existsSync, lstatSync, mkdtempSync, openSync, readdirSync, readFileSync, readSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { installedPackages } from './sbom.mjs';

const NODE_ARCH = { arm64: 'arm64', amd64: 'x64' };
const ELF_MACHINE = { arm64: 183, amd64: 62 };

/** dpkg's status file as stanzas: each one's text and the fields read here. */
function stanzas(text) {
  return text.split(/\n\n+/).filter((s) => s.trim() !== '').map((s) => {
    const field = (name) => new RegExp(`^${name}: (.*)$`, 'm').exec(s)?.[1];
    return { text: s, name: field('Package'), arch: field('Architecture'), version: field('Version'), status: field('Status') };
  });
}

/** A version without its binary-only rebuild's suffix (+bN), which differs between architectures. */
const source = (version) => version.replace(/\+b\d+$/, '');

/** The .deb in `debs` of package `name` for `arch` built from the same source as `version`
 * (named as apt-get download names it, an epoch's colon escaped), or undefined. */
function debOf(debs, name, version, arch) {
  const found = readdirSync(debs).filter((f) => f.startsWith(`${name}_`) && f.endsWith(`_${arch}.deb`))
    .map((f) => ({ f, v: f.slice(name.length + 1, -`_${arch}.deb`.length).replace('%3a', ':') }))
    .filter(({ v }) => source(v) === source(version))
    .sort((a, b) => Number(/\+b(\d+)$/.exec(b.v)?.[1] ?? 0) - Number(/\+b(\d+)$/.exec(a.v)?.[1] ?? 0));
  return found.length === 0 ? undefined : path.join(debs, found[0].f);
}

/** dpkg's name for a package's files in info/: name:arch for a Multi-Arch: same package. */
function infoKey(root, pkg, arch) {
  return existsSync(path.join(root, 'var/lib/dpkg/info', `${pkg.name}:${pkg.arch}.list`)) ? `${pkg.name}:${arch}` : pkg.name;
}

/** Removes an installed package's files (not its directories, which others share) and its info. */
function removePackage(root, pkg) {
  const info = path.join(root, 'var/lib/dpkg/info');
  const key = infoKey(root, pkg, pkg.arch);
  for (const line of readFileSync(path.join(info, `${key}.list`), 'utf8').split('\n')) {
    if (line === '' || line === '/.') continue;
    const file = path.join(root, line);
    let st;
    try { st = lstatSync(file); } catch { continue; }
    if (!st.isDirectory()) unlinkSync(file);
  }
  for (const f of readdirSync(info)) if (f.startsWith(`${key}.`)) unlinkSync(path.join(info, f));
}

/** Unpacks a .deb as dpkg installs it (its files, its info/ files); returns its status stanza. */
function installPackage(root, pkg, key, deb) {
  const info = path.join(root, 'var/lib/dpkg/info');
  execFileSync('dpkg-deb', ['-x', deb, root]);
  const control = mkdtempSync(path.join(path.dirname(root), '.control-'));
  try {
    execFileSync('dpkg-deb', ['-e', deb, control]);
    for (const f of readdirSync(control)) if (f !== 'control') copyFileSync(path.join(control, f), path.join(info, `${key}.${f}`));
    const list = execFileSync('sh', ['-c', 'dpkg-deb --fsys-tarfile "$1" | tar -t', 'sh', deb], { maxBuffer: 1 << 28 }).toString()
      .split('\n').filter((l) => l !== '').map((l) => (l === './' ? '/.' : l.replace(/^\.\//, '/').replace(/\/$/, '')));
    writeFileSync(path.join(info, `${key}.list`), `${list.join('\n')}\n`);
    const fields = readFileSync(path.join(control, 'control'), 'utf8').trimEnd().split('\n');
    const conffiles = existsSync(path.join(control, 'conffiles'))
      ? readFileSync(path.join(control, 'conffiles'), 'utf8').split('\n').filter((l) => l.startsWith('/')) : [];
    const sums = conffiles.filter((f) => existsSync(path.join(root, f)))
      .map((f) => ` ${f} ${createHash('md5').update(readFileSync(path.join(root, f))).digest('hex')}`);
    return [fields[0], `Status: ${pkg.status}`, ...fields.slice(1), ...(sums.length === 0 ? [] : ['Conffiles:', ...sums])].join('\n');
  } finally {
    rmSync(control, { recursive: true, force: true });
  }
}

/** Every regular file under `dir` that is an ELF object, with its machine. */
function elfFiles(dir, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) elfFiles(file, out);
    else if (entry.isFile()) {
      const fd = openSync(file, 'r');
      const head = Buffer.alloc(20);
      const n = readSync(fd, head, 0, 20, 0);
      closeSync(fd);
      if (n === 20 && head.readUInt32BE(0) === 0x7f454c46) out.push({ file, machine: head.readUInt16LE(18) });
    }
  }
  return out;
}

/** An npm package packed into the cache (once), as a .tgz path. */
function packed(npmCache, name, version) {
  const tgz = path.join(npmCache, `${name.replace('@', '').replace('/', '-')}-${version}.tgz`);
  if (!existsSync(tgz)) execFileSync('npm', ['pack', '--silent', `${name}@${version}`], { cwd: npmCache, stdio: 'ignore' });
  return tgz;
}

/**
 * Each npm package's prebuilt binaries (prebuilds/<platform>[.node]) for `arch` too: a package that
 * holds only this machine's (the Dockerfile keeps only those of better-sqlite3) gets `arch`'s from
 * its own tarball instead; one that holds every platform's (bare-fs) selects at load and is left.
 */
function swapPrebuilds(root, arch, npmCache) {
  const here = `linux-${process.arch}`;
  const there = `linux-${NODE_ARCH[arch]}`;
  for (const { name, dir: pkgDir } of installedPackages(path.join(root, 'app/node_modules'))) {
    const prebuilds = path.join(pkgDir, 'prebuilds');
    const held = existsSync(prebuilds) ? readdirSync(prebuilds) : [];
    const mine = held.filter((f) => f === here || f === `${here}.node`);
    if (mine.length > 0 && !held.some((f) => f === there || f === `${there}.node`)) {
      const { version } = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
      execFileSync('tar', ['-xzf', packed(npmCache, name, version), '-C', pkgDir, '--strip-components=1', '--wildcards', `package/prebuilds/${there}*`]);
      for (const f of mine) rmSync(path.join(prebuilds, f), { recursive: true });
    }
  }
}

const [from, to, arch, debs, npmCache] = process.argv.slice(2);
if (npmCache === undefined || NODE_ARCH[arch] === undefined) {
  console.error('usage: crossgrade.mjs FROM TO ARCH DEBS NPM-CACHE (ARCH: arm64 or amd64)');
  process.exit(2);
}
rmSync(to, { recursive: true, force: true });
execFileSync('cp', ['-a', from, to]);
const statusFile = path.join(to, 'var/lib/dpkg/status');
const own = stanzas(readFileSync(statusFile, 'utf8'));
const buildArch = own.find((p) => p.name === 'dpkg')?.arch;
// Every package's files go before any is unpacked, so a path two packages held is not lost.
const replaced = own.filter((p) => p.arch === buildArch && p.status === 'install ok installed').map((p) => {
  const deb = debOf(debs, p.name, p.version, arch);
  if (deb === undefined) throw new Error(`crossgrade: no ${p.name} ${p.version} (or a rebuild of it) for ${arch} in ${debs}`);
  return { p, deb, key: infoKey(to, p, arch) };
});
for (const { p } of replaced) removePackage(to, p);
const stanza = new Map(replaced.map(({ p, deb, key }) => [p, installPackage(to, p, key, deb)]));
writeFileSync(`${statusFile}.new`, `${own.map((p) => stanza.get(p) ?? p.text).join('\n\n')}\n`);
renameSync(`${statusFile}.new`, statusFile);
rmSync(path.join(to, 'etc/ld.so.cache'), { force: true });
// Node where scripts/build-images.sh puts it in the base: bin/node of node-linux-<arch>, same version.
const config = JSON.parse(readFileSync(`${from}.config.json`, 'utf8'));
const nodeVersion = config.Env.find((e) => e.startsWith('NODE_VERSION=')).slice('NODE_VERSION='.length);
execFileSync('tar', ['-xzf', packed(npmCache, `node-linux-${NODE_ARCH[arch]}`, nodeVersion), '-C', path.join(to, 'usr/local'), '--strip-components=1', 'package/bin/node']);
swapPrebuilds(to, arch, npmCache);
// An npm package's prebuilt binaries for other platforms are its own, chosen at load (above).
const foreign = elfFiles(to).filter((e) => e.machine !== ELF_MACHINE[arch] && !/\/node_modules\/(?:@[^/]+\/)?[^/]+\/prebuilds\//.test(e.file));
if (foreign.length > 0) {
  console.error(`crossgrade: ${foreign.length} ELF files not for ${arch}: ${foreign.slice(0, 10).map((e) => e.file.slice(to.length)).join(', ')}`);
  process.exit(1);
}
