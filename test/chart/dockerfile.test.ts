/**
 * The image's recipe, read as written (no Docker engine here): Debian bookworm-slim with Node 20+,
 * Debian's chromium-headless-shell and every font package of scripts/apt-packages.txt, tini (a
 * subreaper, -s) in front of `tintype`, production packages only, user 10001, OCI labels, no
 * secret in a layer; and a build context that carries every folder the `tintype` command loads
 * and nothing else.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ROOT } from '../helm.ts';

const dockerfile = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
/** Instructions with their continuation lines joined, comments dropped. */
const instructions = dockerfile.replace(/\\\n\s*/g, ' ').split('\n').filter((l) => l.trim() !== '' && !l.trimStart().startsWith('#'));
const finalStage = instructions.slice(instructions.map((l) => l.startsWith('FROM ')).lastIndexOf(true));
const args = Object.fromEntries(instructions.filter((l) => l.startsWith('ARG ')).map((l) => l.slice(4).split('=') as [string, string]));

t.test('base: Debian bookworm-slim with Node 20 or later, for every stage', async (t) => {
  const froms = instructions.filter((l) => l.startsWith('FROM '));
  t.ok(froms.length >= 2, 'a stage for the packages, one for the image');
  for (const f of froms) {
    const image = f.split(/\s+/)[1]!.replace(/^\$\{(\w+)\}$/, (_, name: string) => args[name] ?? '');
    t.match(image, /^docker\.io\/library\/node:(\d+)[.\d]*-bookworm-slim(@sha256:[a-f0-9]{64})?$/, f);
    t.ok(Number(/node:(\d+)/.exec(image)?.[1]) >= 20, 'Node 20 or later');
  }
});

t.test('packages: chromium-headless-shell, every font of scripts/apt-packages.txt, tini; npm ci --omit=dev', async (t) => {
  const apt = finalStage.find((l) => l.includes('apt-get install'))!;
  for (const pkg of ['chromium-headless-shell', 'tini', 'ca-certificates']) t.match(apt, new RegExp(`\\s${pkg}\\s`), pkg);
  const fonts = readFileSync(path.join(ROOT, 'scripts/apt-packages.txt'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l.startsWith('fonts-'));
  t.ok(fonts.length >= 5, `${fonts.length} font packages listed`);
  t.match(apt, "$(grep '^fonts-' /tmp/apt-packages.txt", 'the font list is read from scripts/apt-packages.txt, so none is forgotten');
  t.ok(finalStage.some((l) => l.startsWith('COPY scripts/apt-packages.txt /tmp/apt-packages.txt')));
  t.notMatch(apt, /\schromium\s/, 'not the full browser');
  t.ok(instructions.some((l) => /^RUN npm ci --omit=dev\b/.test(l)), 'production packages only');
  t.notOk(finalStage.some((l) => /apt-get install.*\b(g\+\+|make|python3)\b/.test(l)), 'no compiler in the image');
  t.ok(finalStage.some((l) => l.includes('rm -rf /var/lib/apt/lists/*')), 'no apt lists left in a layer');
});

t.test('runs as 10001 under tini (a subreaper where it is not PID 1), `tintype` the entrypoint, data under /tmp', async (t) => {
  t.equal(finalStage.filter((l) => l.startsWith('USER ')).pop(), 'USER 10001:10001');
  t.equal(finalStage.filter((l) => l.startsWith('ENTRYPOINT ')).pop(), 'ENTRYPOINT ["/usr/bin/tini", "-s", "--", "tintype"]');
  t.match(finalStage.find((l) => l.startsWith('ENV '))!, /TINTYPE_DATA_DIR=\/tmp\/tintype/);
  t.match(finalStage.find((l) => l.startsWith('ENV '))!, /HOME=\/tmp/);
  t.ok(finalStage.some((l) => l.includes('useradd --uid 10001')));
});

t.test('OCI labels, and no secret in any layer', async (t) => {
  const labels = finalStage.filter((l) => l.startsWith('LABEL ')).join(' ');
  for (const l of ['title', 'description', 'version', 'revision', 'created', 'licenses']) t.match(labels, `org.opencontainers.image.${l}=`, l);
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
  for (const dir of needed) t.ok(allowed.has(dir), `${dir}/ is in the build context`);
  for (const f of ['package.json', 'package-lock.json', 'tsconfig.json']) t.ok(allowed.has(f), f);
  for (const never of ['test', 'bench', 'charts', 'node_modules', 'data', '.git']) t.notOk(allowed.has(never), `${never} stays out`);
});
