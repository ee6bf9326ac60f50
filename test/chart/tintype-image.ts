/**
 * The tintype images as the chart's tests see them: their names as the chart's values give them
 * (which is how a tintype container is told from any other), and what each one's Dockerfile target
 * gives every container of it (ENV, ENTRYPOINT, CMD), with the argv a kubelet runs from these.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { CHART } from '../helm.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

/** Where each tintype role's image values are, and the Dockerfile target it runs (`tintype-<target>`). */
const ROLE_IMAGES: { at: string[]; target: string; ownTag?: true }[] = [
  { at: ['policy', 'image'], target: 'core' },
  { at: ['guard', 'image'], target: 'core' },
  { at: ['renderer', 'image'], target: 'renderer' },
  { at: ['controller', 'image'], target: 'controller' },
  // Envoy's drain helper: the chart's appVersion, not image.tag (docs/helm.md "Rolling restarts").
  { at: ['envoy', 'drain', 'image'], target: 'core', ownTag: true },
];

interface ImageValues { repository?: string; tag?: string; digest?: string; perRole?: boolean }

function merged(target: any, source: any): any {
  if (typeof source !== 'object' || source === null || Array.isArray(source)) return source;
  const out = typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(source)) out[k] = merged(out[k], v);
  return out;
}

/**
 * The tintype images a render names (`tintype.roleImage` in _helpers.tpl), each with the Dockerfile
 * target it is built from: the chart's values, then `ci/<valuesFile>`, then each `-f` file of
 * `extra`, as `render(valuesFile, extra)` reads them. The browser's image is not among them: its
 * container gives its own command.
 */
export function tintypeImages(valuesFile: string, extra: string[] = []): Map<string, string> {
  const files = [path.join(CHART, 'values.yaml'), path.join(CHART, 'ci', valuesFile)];
  for (let i = 0; i < extra.length; i++) {
    const a = extra[i]!;
    if (a === '-f' || a === '--values') files.push(extra[++i]!);
    else if (a.startsWith('--set') && /(^|,)([a-z.]*\.)?image\./.test(extra[i + 1] ?? '')) throw new Error(`${a} ${extra[i + 1]}: image values are read from files only here`);
  }
  let values: any = {};
  for (const f of files) values = merged(values, parse(readFileSync(f, 'utf8')) ?? {});
  const { appVersion } = parse(readFileSync(path.join(CHART, 'Chart.yaml'), 'utf8')) as { appVersion: string };
  const image = values.image as ImageValues;
  const out = new Map<string, string>();
  for (const role of ROLE_IMAGES) {
    const own = (role.at.reduce((v, k) => v?.[k], values) ?? {}) as ImageValues;
    let repository = own.repository || `${image.repository}-${role.target}`;
    let digest = own.digest;
    let target = `tintype-${role.target}`;
    if (!own.repository && image.perRole === false) {
      repository = image.repository!;
      digest = own.digest || image.digest;
      target = 'tintype';
    }
    const tag = own.tag || (role.ownTag ? appVersion : image.tag || appVersion);
    out.set(digest ? `${repository}:${tag}@${digest}` : `${repository}:${tag}`, target);
  }
  return out;
}

/** Each tintype image a render names, with what its Dockerfile target gives its containers. */
export function tintypeImageConfigs(dockerfile: string, valuesFile: string, extra: string[] = []): Map<string, ImageConfig> {
  return new Map([...tintypeImages(valuesFile, extra)].map(([name, target]) => [name, imageConfig(dockerfile, target)]));
}

/** What a Dockerfile's final stage gives each container: ENV, and the exec-form ENTRYPOINT and CMD. */
export interface ImageConfig {
  env: Record<string, string>;
  entrypoint: string[];
  cmd: string[];
}

/**
 * A target of a Dockerfile (a stage `FROM … AS <target>`; `tintype`, the roles' image, by default),
 * continued lines joined: ENV as `K=V` pairs (values with spaces or quotes are not used by the
 * image, so not parsed), the last ENTRYPOINT and CMD in exec form (JSON arrays; the shell form is
 * refused, as the image does not use it). A stage built on another stage of the file starts from
 * that stage's config, as a builder does; one built on an outside base image must set its
 * ENTRYPOINT, since the base image's is not read here.
 */
export function imageConfig(dockerfile: string, target = 'tintype'): ImageConfig {
  const out = stageConfig(readFileSync(dockerfile, 'utf8').replace(/\\\n/g, ' ').split('\n').map((l) => l.trim()), target);
  if (out.entrypoint.length === 0) throw new Error(`Dockerfile: stage ${target} and the stages it is built on set no ENTRYPOINT`);
  return out;
}

function stageConfig(lines: string[], target: string): ImageConfig {
  const start = lines.findIndex((l) => new RegExp(`^FROM\\s+\\S+\\s+AS\\s+${target}$`, 'i').test(l));
  if (start < 0) throw new Error(`Dockerfile: no stage ${target}`);
  const base = /^FROM\s+(\S+)/i.exec(lines[start]!)![1]!;
  const ownStage = lines.some((l) => new RegExp(`^FROM\\s+\\S+\\s+AS\\s+${base}$`, 'i').test(l));
  const inherited = ownStage ? stageConfig(lines, base) : { env: {}, entrypoint: [], cmd: [] };
  const out: ImageConfig = { env: { ...inherited.env }, entrypoint: inherited.entrypoint, cmd: inherited.cmd };
  const next = lines.findIndex((l, i) => i > start && /^FROM\s/i.test(l));
  let ownCmd = false;
  for (const line of lines.slice(start, next < 0 ? undefined : next)) {
    const m = /^(ENV|ENTRYPOINT|CMD)\s+(.*)$/i.exec(line);
    if (m === null) continue;
    const [, op, rest] = m as unknown as [string, string, string];
    if (op.toUpperCase() === 'ENV') {
      for (const pair of rest.trim().split(/\s+/)) {
        const eq = pair.indexOf('=');
        if (eq <= 0) throw new Error(`Dockerfile: ENV ${pair}: only K=V pairs are read here`);
        out.env[pair.slice(0, eq)] = pair.slice(eq + 1);
      }
      continue;
    }
    let argv: unknown;
    try { argv = JSON.parse(rest); } catch { argv = undefined; }
    if (!Array.isArray(argv) || !argv.every((a) => typeof a === 'string')) throw new Error(`Dockerfile: ${line}: only the exec form is read here`);
    if (op.toUpperCase() === 'ENTRYPOINT') {
      out.entrypoint = argv;
      // Setting an ENTRYPOINT drops the CMD the stage was built on, unless this stage sets one.
      if (!ownCmd) out.cmd = [];
    } else {
      out.cmd = argv;
      ownCmd = true;
    }
  }
  return out;
}

/**
 * The argv a kubelet runs for a container of this image: `command` replaces the ENTRYPOINT and
 * `args` the CMD; with `command` given and no `args`, the image's CMD is not used.
 */
export function containerArgv(c: { command?: string[]; args?: string[] }, image: ImageConfig): string[] {
  if (c.command !== undefined) return [...c.command, ...(c.args ?? [])];
  return [...image.entrypoint, ...(c.args ?? image.cmd)];
}
