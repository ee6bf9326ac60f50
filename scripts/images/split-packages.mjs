// Moves the production npm packages only some roles load out of node_modules, each role's into a
// tree of its own, so the Dockerfile adds them as a layer of that role's image only (docs/helm.md
// "The images"). A package moves with every package only it needs (as the lockfile resolves
// them); one that another package still needs stays.
//
//   node split-packages.mjs APP OUT ROLE=PKG[,PKG...] ...    # e.g. renderer=emoji-datasource-google
// Moves APP/node_modules/<path> to OUT/<ROLE>/node_modules/<path>, keeping nested paths.
import { mkdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';

const [app, out, ...roles] = process.argv.slice(2);
const lock = JSON.parse(readFileSync(path.join(app, 'package-lock.json'), 'utf8'));
const packages = Object.fromEntries(Object.entries(lock.packages).filter(([where, p]) => where !== '' && !p.dev));

/** Where Node finds `name` from the package at `from`: its own node_modules, then each parent's. */
function resolve(from, name) {
  for (let dir = from; ; dir = dir.includes('/node_modules/') ? dir.slice(0, dir.lastIndexOf('/node_modules/')) : '') {
    const where = dir === '' ? `node_modules/${name}` : `${dir}/node_modules/${name}`;
    if (packages[where] !== undefined) return where;
    if (dir === '') return undefined;
  }
}

/** Every package path `roots` need, themselves included. */
function closure(roots) {
  const seen = new Set();
  const queue = [...roots];
  while (queue.length > 0) {
    const where = queue.pop();
    if (seen.has(where)) continue;
    seen.add(where);
    const p = packages[where];
    for (const name of Object.keys({ ...p.dependencies, ...p.optionalDependencies, ...p.peerDependencies })) {
      const dep = resolve(where, name);
      if (dep !== undefined) queue.push(dep);
    }
  }
  return seen;
}

const wanted = roles.map((r) => {
  const [role, list] = r.split('=');
  return { role, roots: list.split(',').map((n) => `node_modules/${n}`) };
});
const split = new Set(wanted.flatMap((w) => w.roots));
const direct = Object.keys(lock.packages[''].dependencies ?? {}).map((n) => `node_modules/${n}`);
const kept = closure(direct.filter((d) => !split.has(d)));
for (const { role, roots } of wanted) {
  const others = closure(wanted.filter((w) => w.role !== role).flatMap((w) => w.roots));
  const moved = [...closure(roots)].filter((w) => !kept.has(w) && !others.has(w))
    // A nested package moves with its parent.
    .filter((w, _, all) => !all.some((o) => o !== w && w.startsWith(`${o}/`)))
    .sort();
  for (const where of moved) {
    mkdirSync(path.dirname(path.join(out, role, where)), { recursive: true });
    renameSync(path.join(app, where), path.join(out, role, where));
  }
  console.log(`split-packages: ${role}: ${moved.length} packages (${moved.map((w) => w.slice('node_modules/'.length)).join(', ')})`);
}
