/**
 * The images' recipe, read as written (scripts/build-images.sh builds and runs it for real): three
 * targets on Debian bookworm with Node 24 or later; `tintype` (every role but the browser: the
 * compiled roles, production packages, tini, no Chromium, no font), `tintype-browser` (Chromium's
 * headless shell, every font of scripts/apt-packages.txt, tini and the launcher, nothing of the
 * roles), `tintype-all` (the default: `tintype start` on one machine); no TypeScript at run time;
 * each lists its Debian packages; OCI labels, no secret in a layer; and a build context that
 * carries every folder the `tintype` command loads and nothing else.
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

t.test('base: Debian bookworm with Node 24 or later (NODE_IMAGE), for every stage not built on another', async (t) => {
  const named = new Set(stages.map((s) => s.name));
  t.match(args['NODE_IMAGE'], /^docker\.io\/library\/node:(\d+)[.\d]*-bookworm-slim(@sha256:[a-f0-9]{64})?$/, 'the default: the official slim image');
  t.ok(Number(/node:(\d+)/.exec(args['NODE_IMAGE'] ?? '')?.[1]) >= 24, 'Node 24 or later (Node 20 reached its end of life)');
  const pinned = readFileSync(path.join(ROOT, '.node-version'), 'utf8').trim();
  t.match(args['NODE_IMAGE'], `node:${pinned}-`, `the Node of .node-version, which the checkout runs on and scripts/build-images.sh builds with (${pinned})`);
  for (const s of stages) t.ok(s.from === '${NODE_IMAGE}' || named.has(s.from), `${s.name}: FROM ${s.from}`);
});

t.test('three targets; the default is tintype-all, for `docker build .` and `tintype start`', async (t) => {
  for (const name of ['tintype', 'tintype-browser', 'tintype-all']) t.ok(stages.some((s) => s.name === name), name);
  t.equal(stages.at(-1)!.name, 'tintype-all');
  t.equal(stage('tintype-browser').from, 'chromium', 'the browser\'s packages: one layer for both images that hold Chromium');
  t.equal(stage('tintype-all').from, 'chromium');
  t.ok(stage('tintype-all').lines.includes('CMD ["start"]'));
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
  t.ok(stage('tintype').lines.includes('COPY --from=build /build/dist ./'), 'the roles\' image runs the compiled roles');
  t.notOk(stage('tintype').lines.some((l) => /^COPY (?!--from)/.test(l) && !l.startsWith('COPY package.json')), 'and no source from the checkout');
});

t.test('tintype: tini, CA certificates and the OG cards\' fonts only; no Chromium, no compiler', async (t) => {
  const apt = aptOf('tintype');
  for (const p of ['tini', 'ca-certificates']) t.match(apt, new RegExp(`\\s${p}(\\s|$)`), p);
  t.notMatch(apt, /chromium|g\+\+|make|python3/);
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
  const installed = new Set(apt.split(/\s+/).filter((w) => w.startsWith('fonts-')));
  t.same([...installed].sort(), [...owners].sort(), 'the fonts installed are exactly the packages of the faces');
  t.ok(stage('tintype').lines.includes('COPY --from=packages /app/node_modules ./node_modules'));
});

t.test('tintype-browser: Chromium\'s headless shell, every font of scripts/apt-packages.txt, tini, the launcher; nothing of the roles', async (t) => {
  const apt = aptOf('chromium');
  for (const p of ['chromium-headless-shell', 'tini']) t.match(apt, new RegExp(`\\s${p}(\\s|$)`), p);
  t.notMatch(apt, /\schromium\s/, 'not the full browser');
  t.ok(fonts.length >= 5, `${fonts.length} font packages listed`);
  t.match(apt, "$(grep '^fonts-' /tmp/apt-packages.txt", 'the font list is read from scripts/apt-packages.txt, so none is forgotten');
  const copies = stage('tintype-browser').lines.filter((l) => l.startsWith('COPY '));
  t.notOk(aptOf('tintype-browser'), 'nothing installed beyond the browser\'s packages');
  t.same(copies, ['COPY --from=build /build/dist/renderer/browser/launcher /app/launcher'],
    'the launcher alone: no node_modules, no role');
  t.equal(stage('tintype-browser').lines.filter((l) => l.startsWith('USER ')).pop(), 'USER 10002:10002', 'a uid of its own, not the renderer\'s');
  t.equal(stage('tintype-browser').lines.filter((l) => l.startsWith('ENTRYPOINT ')).pop(), 'ENTRYPOINT ["/usr/bin/tini", "--", "node", "/app/launcher/main.js"]');
  t.ok(stage('tintype-browser').lines.some((l) => l.includes('useradd --uid 10002')));
});

t.test('tintype-all: the browser\'s packages, iproute2 for TINTYPE_ISOLATION=netns, and the roles as the tintype image has them', async (t) => {
  t.match(aptOf('tintype-all'), /\siproute2(\s|$)/);
  const roles = (name: string) => stage(name).lines.filter((l) => /^(COPY|WORKDIR|ENV|USER|ENTRYPOINT)\b/.test(l) || l.includes('ln -s /app/bin/tintype.js'));
  t.same(roles('tintype-all'), roles('tintype'), 'the same roles, files, settings, user and entrypoint');
});

t.test('each image lists its Debian packages and versions; no apt list or cache in a layer', async (t) => {
  for (const name of ['tintype', 'tintype-browser', 'tintype-all']) {
    t.ok(stage(name).lines.some((l) => l.includes("dpkg-query -W -f '${Package}\\t${Version}\\n' > /usr/share/tintype/debian-packages.txt")), `${name}: written last in its stage`);
  }
  for (const s of stages.filter((x) => aptOf(x.name) !== '')) {
    t.match(aptOf(s.name), /--mount=type=cache,target=\/var\/cache\/apt\b.*--mount=type=cache,target=\/var\/lib\/apt\/lists\b/, `${s.name}: apt's cache and lists are cache mounts, never layers`);
  }
  t.notOk(stages.filter((s) => s.name !== 'packages').some((s) => /apt-get install.*\b(g\+\+|make|python3)\b/.test(aptOf(s.name))), 'no compiler in an image');
});

t.test('roles run as 10001 under tini (a subreaper where it is not PID 1), `tintype` the entrypoint, data under /tmp', async (t) => {
  for (const name of ['tintype', 'tintype-all']) {
    const lines = stage(name).lines;
    t.equal(lines.filter((l) => l.startsWith('USER ')).pop(), 'USER 10001:10001', name);
    t.equal(lines.filter((l) => l.startsWith('ENTRYPOINT ')).pop(), 'ENTRYPOINT ["/usr/bin/tini", "-s", "--", "tintype"]', name);
  }
  const env = stage('tintype').lines.find((l) => l.startsWith('ENV '))!;
  t.match(env, /TINTYPE_DATA_DIR=\/tmp\/tintype/);
  t.match(env, /HOME=\/tmp/);
  t.ok(stage('tintype').lines.some((l) => l.includes('useradd --uid 10001')));
});

t.test('OCI labels, and no secret in any layer', async (t) => {
  for (const name of ['tintype', 'tintype-browser']) {
    const labels = stage(name).lines.filter((l) => l.startsWith('LABEL ')).join(' ');
    for (const l of ['title', 'description', 'version', 'revision', 'created', 'licenses', 'base.name']) t.match(labels, `org.opencontainers.image.${l}=`, `${name}: ${l}`);
  }
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
  for (const f of ['package.json', 'package-lock.json', 'tsconfig.json', 'tsconfig.build.json']) t.ok(allowed.has(f), f);
  for (const never of ['test', 'bench', 'charts', 'node_modules', 'data', 'dist', '.git']) t.notOk(allowed.has(never), `${never} stays out`);
});
