/**
 * The chart's earlier revisions, from the repository's git history: the last revision of the
 * previous chart version (what a release being upgraded was installed from) and the last merged
 * revision (what a branch's changes are compared with; charts/tintype/UPGRADING.md).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'yaml';
import { CHART, ROOT } from '../helm.ts';

const CHART_DIR = 'charts/tintype';

function git(args: string[]): string {
  return execFileSync('git', args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).trim();
}

/** Chart.yaml's `version` in a Chart.yaml text. */
export function versionOf(chartYaml: string): string {
  return String((parse(chartYaml) as { version: unknown }).version);
}

/** The chart's version in the working tree. */
export function currentVersion(): string {
  return versionOf(readFileSync(path.join(CHART, 'Chart.yaml'), 'utf8'));
}

/** The chart's version at a commit. */
export function versionAt(commit: string): string {
  return versionOf(git(['show', `${commit}:${CHART_DIR}/Chart.yaml`]));
}

/** Whether a.b.c is higher than x.y.z (numeric parts; a pre-release suffix is ignored). */
export function semverAbove(a: string, b: string): boolean {
  const parts = (v: string) => v.split('-')[0]!.split('.').map(Number);
  const [x, y] = [parts(a), parts(b)];
  for (let i = 0; i < 3; i++) if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) > (y[i] ?? 0);
  return false;
}

/**
 * The newest commit whose chart carries the version before the working tree's: the parent of the
 * commit that brought the current version in (HEAD itself while the bump is not committed yet).
 */
export function previousRevision(): { commit: string; version: string } {
  const current = currentVersion();
  if (versionAt('HEAD') !== current) return { commit: git(['rev-parse', 'HEAD']), version: versionAt('HEAD') };
  let introduced: string | undefined;
  for (const commit of git(['log', '--format=%H', 'HEAD', '--', `${CHART_DIR}/Chart.yaml`]).split('\n')) {
    if (versionAt(commit) !== current) break;
    introduced = commit;
  }
  if (introduced === undefined) throw new Error(`no commit brings ${CHART_DIR} version ${current}`);
  const commit = git(['rev-parse', `${introduced}^`]);
  return { commit, version: versionAt(commit) };
}

/** The chart of a commit, extracted into a temporary directory; returns the chart's directory there. */
export function extractChart(commit: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tintype-chart-'));
  const tar = execFileSync('git', ['archive', '--format=tar', commit, CHART_DIR], { cwd: ROOT, maxBuffer: 64 * 1024 * 1024 });
  execFileSync('tar', ['-x', '-C', dir], { input: tar });
  return path.join(dir, CHART_DIR);
}

/**
 * The last merged revision: on a branch, where it left main (git merge-base); on main itself, the
 * merge's first parent (main before what this commit brought).
 */
export function lastMergedRevision(): string {
  const head = git(['rev-parse', 'HEAD']);
  let main: string | undefined;
  try {
    main = git(['rev-parse', '--verify', '--quiet', 'main']);
  } catch {
    main = undefined;
  }
  const base = main === undefined ? head : git(['merge-base', 'HEAD', main]);
  return base === head ? git(['rev-parse', 'HEAD^1']) : base;
}

/** Whether the working tree's chart differs from the chart of a commit (any file under charts/tintype). */
export function chartChangedSince(commit: string): boolean {
  const changed = git(['diff', '--name-only', commit, '--', CHART_DIR]);
  const untracked = git(['ls-files', '--others', '--exclude-standard', '--', CHART_DIR]);
  return changed !== '' || untracked !== '';
}
