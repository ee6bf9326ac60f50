/**
 * The images' recipe, read as written (scripts/build-images.sh builds and runs it for real): every
 * target on Debian 13 (trixie) with the Node of .node-version; `tintype-core` (policy, guard,
 * migrate, keys, usage: the roles' layer, said once, with no Chromium, font, emoji data or
 * Kubernetes client), `tintype-renderer` and `tintype-controller` on it with what only that role
 * loads, `tintype` (every Node role), `tintype-browser` (Chromium's headless shell, every font of
 * scripts/apt-packages.txt, tini and the launcher, nothing of the roles), `tintype-all` (the
 * default: `tintype start` on one machine); Chromium the archive's newest, checked; no TypeScript
 * at run time; an SBOM in each; OCI labels, no secret in a layer; and a build context that carries
 * every folder the `tintype` command loads and nothing else.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ROOT } from '../helm.ts';

const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
/** Instructions with their continuation lines joined, comments dropped. */
const instructions = dockerfile.replace(/\\\n\s*/g, ' ').split('\n').filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
const args = Object.fromEntries(instructions.filter((l) => l.startsWith('ARG ') && l.includes('=')).map((l) => l.slice(4).split('=') as [string, string]));
/** Each stage: its name, what it is built FROM, its instructions. */
const stages = instructions.reduce<Array<{ name: string; from: string; lines: string[] }>>((all, l) => {
  const m = /^FROM\s+(\S+)(?:\s+AS\s+(\S+))?$/.exec(l);
  if (m !== null) all.push({ name: m[2] ?? '', from: m[1]!, lines: [] });
  else all.at(-1)?.lines.push(l);
  return all;
}, []);
const stage = (name: string) => {
  const s = stages.find((x) => x.name === name);
  if (s === undefined) throw new Error(`no stage ${name}`);
  return s;
};
const aptOf = (name: string): string => stage(name).lines.find((l) => l.includes('apt-get install')) ?? '';
const fonts = readFileSync(path.join(ROOT, 'scripts/apt-packages.txt'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l.startsWith('fonts-'));
const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string>; devDependencies: Record<string, string> };

const TARGETS = ['tintype-core', 'tintype-renderer', 'tintype-controller', 'tintype', 'tintype-browser', 'tintype-all'];
const buildImages = readFileSync(path.join(ROOT, 'scripts/build-images.sh'), 'utf8');
const installChromium = readFileSync(path.join(ROOT, 'scripts/images/install-chromium.sh'), 'utf8');

t.test('base: Debian trixie with the Node of .node-version (NODE_IMAGE; BUILD_IMAGE adds npm), for every stage not built on another', async (t) => {
  const named = new Set(stages.map((s) => s.name));
  const pinned = readFileSync(path.join(ROOT, '.node-version'), 'utf8').trim();
  t.match(pinned, /^24\./, 'Node 24 (Node 20 reached its end of life)');
  for (const arg of ['NODE_IMAGE', 'BUILD_IMAGE']) {
    t.equal(args[arg], `docker.io/library/node:${pinned}-trixie-slim`, `${arg}: the official slim image of the checkout's Node (${pinned}) on trixie`);
  }
  for (const s of stages) t.ok(['${NODE_IMAGE}', '${BUILD_IMAGE}'].includes(s.from) || named.has(s.from), `${s.name}: FROM ${s.from}`);
  for (const s of ['packages', 'build']) t.equal(stage(s).from, '${BUILD_IMAGE}', `${s}: the only stages with npm`);
  t.match(buildImages, /^SUITE=trixie$/m, 'scripts/build-images.sh makes its bases from trixie');
  t.match(buildImages, /debian-security \$SUITE-security main/, 'with the security suite');
});

t.test('six targets; the default is tintype-all; each role\'s image is built on the roles\' layer', async (t) => {
  for (const name of TARGETS) t.ok(stages.some((s) => s.name === name), name);
  t.equal(stages.at(-1)!.name, 'tintype-all');
  t.same(stages.filter((s) => s.from === 'tintype-core').map((s) => s.name).sort(), ['tintype-controller', 'tintype-renderer']);
  t.equal(stage('tintype').from, 'tintype-renderer');
  t.equal(stage('tintype-all').from, 'tintype');
  t.equal(stage('tintype-browser').from, '${NODE_IMAGE}', 'the browser: nothing of the roles');
  t.ok(stage('tintype-all').lines.includes('CMD ["start"]'));
  for (const target of TARGETS) t.match(buildImages, new RegExp(`TARGETS=\\(.*\\b${target}\\b`), `scripts/build-images.sh builds ${target}`);
});

t.test('the roles\' layer is said once: user, packages, compiled roles, the command, settings, entrypoint', async (t) => {
  const roles = (l: string) => /useradd --uid 10001|COPY --from=build \/build\/dist \.\/|ln -s \/app\/bin\/tintype\.js|^ENV NODE_ENV|^ENTRYPOINT .*"tintype"\]|COPY --from=packages \/app\/node_modules/.test(l);
  t.equal(stage('tintype-core').lines.filter(roles).length, 6, 'in tintype-core');
  for (const s of stages.filter((x) => x.name !== 'tintype-core')) t.same(s.lines.filter(roles), [], `not again in ${s.name}`);
});

t.test('compiled: the build stage runs the lockfile\'s TypeScript on tsconfig.build.json; no tsx or typescript in production packages', async (t) => {
  const build = stage('build').lines.join('\n');
  t.match(build, "require('./package-lock.json').packages['node_modules/typescript'].version", 'the lockfile\'s TypeScript');
  t.match(build, 'tsc -p tsconfig.build.json');
  t.ok(instructions.some((l) => /^RUN .*npm ci --omit=dev\b/.test(l)), 'production packages only');
  for (const dev of ['tsx', 'typescript']) {
    t.notOk(dev in pkg.dependencies, `${dev} is not a production package`);
    t.ok(dev in pkg.devDependencies, `${dev} is a development package`);
  }
  t.notOk(stages.filter((s) => s.name.startsWith('tintype')).some((s) => s.lines.some((l) => /^COPY (?!--from)/.test(l) && !l.startsWith('COPY package.json'))), 'no source from the checkout in an image');
});

t.test('what only some roles load is a layer of their image: the emoji data and the renderer\'s packages, the Kubernetes client', async (t) => {
  const split = stage('packages').lines.find((l) => l.includes('split-packages.mjs /app /split')) ?? '';
  t.match(split, /renderer=\S*emoji-datasource-google/);
  t.match(split, /controller=@kubernetes\/client-node/);
  for (const p of /renderer=(\S+)/.exec(split)![1]!.split(',').concat('@kubernetes/client-node')) t.ok(p in pkg.dependencies, `${p} is a production package`);
  t.ok(stage('tintype-renderer').lines.includes('COPY --from=packages /split/renderer/node_modules ./node_modules'));
  t.ok(stage('tintype-controller').lines.includes('COPY --from=packages /split/controller/node_modules ./node_modules'));
  t.ok(stage('tintype').lines.includes('COPY --from=packages /split/controller/node_modules ./node_modules'));
  t.notOk(stage('tintype-core').lines.some((l) => l.includes('/split/')), 'none in tintype-core');
  t.match(stage('packages').lines.join('\n'), /-name '\*\.d\.ts'.*-name '\*\.map'.*-delete/, 'no type declarations or source maps');
});

t.test('tintype-core: tini and CA certificates only; tintype-renderer: the OG cards\' fonts exactly; no Chromium, no compiler', async (t) => {
  const apt = aptOf('tintype-core');
  for (const p of ['tini', 'ca-certificates']) t.match(apt, new RegExp(`\\s${p}(\\s|$)`), p);
  t.notMatch(apt, /chromium|fonts-|g\+\+|make|python3/);
  t.notMatch(aptOf('tintype-renderer'), /chromium|g\+\+|make|python3/);
  // Every face file the renderer's drawing threads read (renderer/og/typeset/faces.ts), as this
  // machine's Debian packages hold it: each such package is installed, and no other font.
  const faces = readFileSync(path.join(ROOT, 'renderer/og/typeset/faces.ts'), 'utf8');
  const files = [
    ...[...faces.matchAll(/'(Noto[A-Za-z0-9-]+)'/g)].map((m) => `/usr/share/fonts/truetype/noto/${m[1]}.ttf`),
    ...[...faces.matchAll(/\/(Nanum[A-Za-z]+\.ttf)/g)].map((m) => `/usr/share/fonts/truetype/nanum/${m[1]}`),
    /const DROID = '([^']+)'/.exec(faces)![1]!,
  ].filter((f) => existsSync(f));
  t.ok(files.length >= 5, `${files.length} face files found on this machine`);
  const owners = new Set(execFileSync('dpkg-query', ['-S', ...files], { encoding: 'utf8' }).split('\n').filter(Boolean).map((l) => l.split(':')[0]!));
  const installed = new Set(aptOf('tintype-renderer').split(/\s+/).filter((w) => w.startsWith('fonts-')));
  t.same([...installed].sort(), [...owners].sort(), 'the fonts installed are exactly the packages of the faces');
});

t.test('Chromium: the archive\'s newest headless shell and every font of scripts/apt-packages.txt, checked at build', async (t) => {
  for (const name of ['tintype-browser', 'tintype-all']) {
    const run = stage(name).lines.find((l) => l.includes('install-chromium.sh')) ?? '';
    t.match(run, 'CHROMIUM_VERSION="${CHROMIUM_VERSION}" /tmp/scripts/images/install-chromium.sh /tmp/scripts/apt-packages.txt', `${name}: one recipe`);
    t.ok(stage(name).lines.includes('ARG CHROMIUM_VERSION='), `${name}: the version scripts/build-images.sh pins`);
  }
  t.match(installChromium, '"chromium-headless-shell=$want" tini');
  t.match(installChromium, "$(grep '^fonts-' \"$list\"", 'the font list is read from scripts/apt-packages.txt, so none is forgotten');
  t.match(installChromium, /dpkg --compare-versions "\$installed" ge "\$candidate"[\s\S]*exit 1/, 'fails when older than the candidate');
  t.ok(fonts.length >= 5, `${fonts.length} font packages listed`);
  t.match(buildImages, /--build-arg CHROMIUM_VERSION="\$CHROMIUM_VERSION"/, 'the build pins the archive\'s newest');
  t.match(buildImages, /dpkg --compare-versions "\$have" ge "\$CHROMIUM_VERSION"[\s\S]{0,200}exit 1/, 'and fails when an image holds an older one');
});

t.test('tintype-browser: the launcher, nothing of the roles, its own uid', async (t) => {
  const copies = stage('tintype-browser').lines.filter((l) => l.startsWith('COPY '));
  t.same(copies, ['COPY --from=build /build/dist/renderer/browser/launcher /app/launcher'], 'the launcher alone: no node_modules, no role');
  t.equal(stage('tintype-browser').lines.filter((l) => l.startsWith('USER ')).pop(), 'USER 10002:10002', 'a uid of its own, not the renderer\'s');
  t.equal(stage('tintype-browser').lines.filter((l) => l.startsWith('ENTRYPOINT ')).pop(), 'ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/launcher/main.js"]');
  t.ok(stage('tintype-browser').lines.some((l) => l.includes('useradd --uid 10002')));
  t.match(aptOf('tintype-all') + stage('tintype-all').lines.join(' '), /install-chromium\.sh \S+ iproute2/, 'tintype-all: iproute2 for TINTYPE_ISOLATION=netns');
});

t.test('each image carries its SBOM at /usr/share/tintype/sbom.cdx.json, written last; no apt list or cache in a layer', async (t) => {
  for (const name of TARGETS) {
    const runs = stage(name).lines.filter((l) => l.startsWith('RUN '));
    t.match(runs.at(-1), `node /tmp/sbom.mjs write / /app ${name} "\${VERSION}" > /usr/share/tintype/sbom.cdx.json`, `${name}: its last RUN`);
  }
  for (const s of stages.filter((x) => aptOf(x.name) !== '' || x.lines.some((l) => l.includes('install-chromium.sh')))) {
    const run = s.lines.find((l) => l.includes('apt-get') || l.includes('install-chromium.sh')) ?? '';
    t.match(run, /--mount=type=cache,target=\/var\/cache\/apt\b.*--mount=type=cache,target=\/var\/lib\/apt\/lists\b/, `${s.name}: apt's cache and lists are cache mounts, never layers`);
  }
  t.notOk(stages.some((s) => /apt-get install.*\b(g\+\+|make|python3)\b/.test(aptOf(s.name))), 'no compiler in an image');
});

t.test('roles run as 10001 under tini (a subreaper where it is not PID 1), `tintype` the entrypoint, data under /tmp', async (t) => {
  for (const name of TARGETS.filter((n) => n !== 'tintype-browser')) {
    t.equal(stage(name).lines.filter((l) => l.startsWith('USER ')).pop(), 'USER 10001:10001', name);
  }
  t.equal(stage('tintype-core').lines.filter((l) => l.startsWith('ENTRYPOINT ')).pop(), 'ENTRYPOINT ["/usr/bin/tini", "-s", "--", "tintype"]');
  const env = stage('tintype-core').lines.find((l) => l.startsWith('ENV '))!;
  t.match(env, /TINTYPE_DATA_DIR=\/tmp\/tintype/);
  t.match(env, /HOME=\/tmp/);
});

t.test('OCI labels (set by the build, with the version and the commit, which are also its tags), and no secret in any layer', async (t) => {
  for (const l of ['title', 'version', 'revision', 'created', 'licenses', 'base.name']) t.match(buildImages, `--label org.opencontainers.image.${l}=`, l);
  t.match(buildImages, '-t "localhost/$target:$VERSION" -t "localhost/$target:$VERSION-${REVISION:0:12}"', 'tagged with the version, and the version and commit');
  for (const l of instructions.filter((x) => /^(ARG|ENV) /.test(x))) t.notMatch(l, /SECRET|PASSWORD|TOKEN|DATABASE_URL|REDIS_URL|_KEY\b/i, l);
});

t.test('.dockerignore lets in every folder the tintype command loads, and nothing else', async (t) => {
  const ignore = readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'));
  t.equal(ignore[0], '*', 'everything is out unless named');
  const allowed = new Set(ignore.filter((l) => l.startsWith('!')).map((l) => l.slice(1).replace(/\/$/, '')));
  // Top-level folders reached from bin/ (imports of each subcommand and what they import).
  const needed = new Set<string>(['bin']);
  const seen = new Set<string>();
  const visit = (file: string): void => {
    if (seen.has(file)) return;
    seen.add(file);
    for (const m of readFileSync(file, 'utf8').matchAll(/from '(\.{1,2}\/[^']+)'|import\('(\.{1,2}\/[^']+)'\)/g)) {
      const target = path.resolve(path.dirname(file), m[1] ?? m[2]!);
      needed.add(path.relative(ROOT, target).split(path.sep)[0]!);
      if (target.endsWith('.ts')) visit(target);
    }
  };
  for (const f of readdirSync(path.join(ROOT, 'bin/commands'))) visit(path.join(ROOT, 'bin/commands', f));
  for (const dir of needed) {
    t.ok(allowed.has(dir), `${dir}/ is in the build context`);
    t.ok(stage('build').lines.includes(`COPY ${dir} ./${dir}`), `${dir}/ is compiled`);
  }
  for (const f of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/images', 'scripts/apt-packages.txt']) t.ok(allowed.has(f), f);
  for (const never of ['test', 'bench', 'charts', 'node_modules', 'data', 'dist', '.git']) t.notOk(allowed.has(never), `${never} stays out`);
});
