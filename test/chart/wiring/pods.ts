/**
 * What a kubelet would run for the rendered Deployments: each container's argv (for the tintype
 * image, its ENTRYPOINT and CMD where the container gives no command and arguments), its
 * environment (the image's ENV, then the container's `env` and `envFrom`, with Secret, ConfigMap
 * and field references resolved from the rendered objects), its ports and probes, and the files
 * its ConfigMap volumes mount.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { K8sObject } from '../../helm.ts';
import { containerArgv, type ImageConfig } from '../tintype-image.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

/** One pod of a Deployment, as the kubelet would start its first container. */
export interface PodPlan {
  /** The Deployment's name. */
  deployment: string;
  /** `app.kubernetes.io/component`: envoy, policy, renderer, guard, controller. */
  component: string;
  labels: Record<string, string>;
  /** What the container runs: its command and arguments, over the image's ENTRYPOINT and CMD. */
  argv: string[];
  env: Record<string, string>;
  /** Container ports by name. */
  ports: Record<string, number>;
  /** An httpGet probe's path and port (named ports resolved). */
  probe(kind: 'startupProbe' | 'livenessProbe' | 'readinessProbe'): { path: string; port: number };
  container: any;
  pod: any;
}

function secretData(o: any): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(o.data ?? {})) out[k] = Buffer.from(String(v), 'base64').toString('utf8');
  for (const [k, v] of Object.entries(o.stringData ?? {})) out[k] = String(v);
  return out;
}

/** Data of the Secrets and ConfigMaps a render holds, by kind and name. */
function sources(objects: K8sObject[]): (kind: 'Secret' | 'ConfigMap', name: string) => Record<string, string> | undefined {
  return (kind, name) => {
    const o: any = objects.find((x) => x.kind === kind && x.metadata.name === name);
    if (o === undefined) return undefined;
    return kind === 'Secret' ? secretData(o) : Object.fromEntries(Object.entries(o.data ?? {}).map(([k, v]) => [k, String(v)]));
  };
}

/**
 * The container's environment as the kubelet builds it: `envFrom` first, then `env` in order;
 * a reference to a missing Secret, ConfigMap or key stops the pod (as CreateContainerConfigError).
 */
export function containerEnv(c: any, objects: K8sObject[], fields: { namespace: string; podName: string; podIP: string }): Record<string, string> {
  const get = sources(objects);
  const out: Record<string, string> = {};
  for (const from of c.envFrom ?? []) {
    const ref = from.secretRef ?? from.configMapRef;
    const data = get(from.secretRef ? 'Secret' : 'ConfigMap', ref.name);
    if (data === undefined) {
      if (ref.optional === true) continue;
      throw new Error(`${c.name}: envFrom ${ref.name} does not exist`);
    }
    for (const [k, v] of Object.entries(data)) out[`${from.prefix ?? ''}${k}`] = v;
  }
  for (const e of c.env ?? []) {
    if (e.value !== undefined || e.valueFrom === undefined) {
      out[e.name] = String(e.value ?? '').replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, name: string) => out[name] ?? all);
      continue;
    }
    const ref = e.valueFrom.secretKeyRef ?? e.valueFrom.configMapKeyRef;
    if (ref !== undefined) {
      const value = get(e.valueFrom.secretKeyRef ? 'Secret' : 'ConfigMap', ref.name)?.[ref.key];
      if (value === undefined) {
        if (ref.optional === true) continue;
        throw new Error(`${c.name}: ${e.name} refers to ${ref.name}/${ref.key}, which the release does not hold`);
      }
      out[e.name] = value;
      continue;
    }
    const field = e.valueFrom.fieldRef?.fieldPath;
    if (field === 'metadata.namespace') out[e.name] = fields.namespace;
    else if (field === 'metadata.name') out[e.name] = fields.podName;
    else if (field === 'status.podIP') out[e.name] = fields.podIP;
    else throw new Error(`${c.name}: ${e.name}: a value source this test does not resolve`);
  }
  return out;
}

/**
 * The first container of every Deployment of a render, as its pod would run it. A container of a
 * tintype image (a name of `images`, as the chart's values give them) gets that image's ENV,
 * ENTRYPOINT and CMD; any other must give its command, as this test does not know its image.
 */
export function podPlans(objects: K8sObject[], images: Map<string, ImageConfig>, fields: (deployment: string) => { namespace: string; podName: string; podIP: string }): PodPlan[] {
  return objects.filter((o) => o.kind === 'Deployment').map((d: any) => {
    const pod = d.spec.template.spec;
    const c = pod.containers[0];
    const ports: Record<string, number> = Object.fromEntries((c.ports ?? []).map((p: any) => [p.name, p.containerPort]));
    const labels = d.spec.template.metadata.labels as Record<string, string>;
    const config = images.get(c.image);
    if (config === undefined && c.command === undefined) throw new Error(`${d.metadata.name}: ${c.image} runs its image's entrypoint, which this test does not know`);
    return {
      deployment: d.metadata.name,
      component: labels['app.kubernetes.io/component']!,
      labels,
      argv: config !== undefined ? containerArgv(c, config) : [...c.command, ...(c.args ?? [])],
      // The tintype image's ENV applies to its containers only.
      env: { ...(config?.env ?? {}), ...containerEnv(c, objects, fields(d.metadata.name)) },
      ports,
      probe(kind) {
        const get = c[kind]?.httpGet;
        if (get === undefined) throw new Error(`${d.metadata.name}: no ${kind}`);
        const port = typeof get.port === 'number' ? get.port : ports[get.port];
        if (port === undefined) throw new Error(`${d.metadata.name}: ${kind} names port ${get.port}, which the container does not have`);
        return { path: get.path, port };
      },
      container: c,
      pod,
    };
  });
}

/**
 * Writes the files a pod's ConfigMap volumes mount, under `root` (a mount path `/etc/envoy` is
 * `root/etc/envoy`), as the kubelet projects them.
 */
export function projectConfigMaps(plan: PodPlan, objects: K8sObject[], root: string): void {
  const get = sources(objects);
  for (const m of plan.container.volumeMounts ?? []) {
    const v = (plan.pod.volumes ?? []).find((x: any) => x.name === m.name);
    if (v?.configMap === undefined) continue;
    const data = get('ConfigMap', v.configMap.name);
    if (data === undefined) throw new Error(`${plan.deployment}: volume ${m.name}: no ConfigMap ${v.configMap.name}`);
    const items: Array<{ key: string; path: string }> = v.configMap.items ?? Object.keys(data).map((k) => ({ key: k, path: k }));
    for (const item of items) {
      const value = data[item.key];
      if (value === undefined) throw new Error(`${plan.deployment}: ConfigMap ${v.configMap.name} has no ${item.key}`);
      const file = path.join(root, m.mountPath, item.path);
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, value);
    }
  }
}
