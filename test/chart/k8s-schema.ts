/**
 * Validation of rendered objects against the Kubernetes API, unknown fields rejected, from two
 * registry packages generated from Kubernetes' OpenAPI document:
 *  - kubernetes-models: every field's type, format, enum and required fields (its validators
 *    let unknown fields pass);
 *  - @kubernetes/client-node: the complete field list of every type (attributeTypeMap), used
 *    to refuse any field the API does not define, at every depth, as `kubectl --validate=strict`
 *    and the API server's strict field validation do.
 */
import * as k8s from '@kubernetes/client-node';
import type { K8sObject } from '../helm.ts';

interface Attribute {
  baseName: string;
  type: string;
}
type ModelClass = { getAttributeTypeMap(): Attribute[] };

function model(name: string): ModelClass | undefined {
  const m = (k8s as unknown as Record<string, unknown>)[name];
  return typeof m === 'function' && 'getAttributeTypeMap' in m ? (m as unknown as ModelClass) : undefined;
}

/** client-node's class name of a kind: `apps/v1` Deployment -> V1Deployment. */
function className(apiVersion: string, kind: string): string {
  const version = apiVersion.split('/').pop()!;
  return version.charAt(0).toUpperCase() + version.slice(1) + kind;
}

const PRIMITIVES = new Set(['string', 'number', 'boolean', 'Date', 'any', 'object', 'IntOrString']);

function checkPrimitive(type: string, value: unknown, at: string, errors: string[]): void {
  const ok =
    type === 'any' || type === 'object' ? true
    : type === 'string' || type === 'Date' ? typeof value === 'string'
    : type === 'number' ? typeof value === 'number'
    : type === 'boolean' ? typeof value === 'boolean'
    : type === 'IntOrString' ? typeof value === 'number' || typeof value === 'string'
    : false;
  if (!ok) errors.push(`${at}: expected ${type}, got ${JSON.stringify(value)}`);
}

/** Walks a value against a client-node type name; collects unknown fields and wrong shapes. */
function walk(type: string, value: unknown, at: string, errors: string[]): void {
  if (value === null || value === undefined) return;
  const array = /^Array<(.+)>$/.exec(type);
  if (array !== null) {
    if (!Array.isArray(value)) return void errors.push(`${at}: expected a list`);
    value.forEach((v, i) => walk(array[1]!, v, `${at}[${i}]`, errors));
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map !== null) {
    if (typeof value !== 'object' || Array.isArray(value)) return void errors.push(`${at}: expected a map`);
    for (const [k, v] of Object.entries(value)) walk(map[1]!, v, `${at}.${k}`, errors);
    return;
  }
  if (PRIMITIVES.has(type)) return checkPrimitive(type, value, at, errors);
  const m = model(type);
  if (m === undefined) return void errors.push(`${at}: no Kubernetes type ${type}`);
  if (typeof value !== 'object' || Array.isArray(value)) return void errors.push(`${at}: expected an object (${type})`);
  const fields = new Map(m.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const t = fields.get(k);
    if (t === undefined) errors.push(`${at}.${k}: unknown field (${type})`);
    else walk(t, v, `${at}.${k}`, errors);
  }
}

/** kubernetes-models' module of a group/version: `apps/v1` -> kubernetes-models/apps/v1, `v1` -> kubernetes-models/v1. */
async function typedModel(apiVersion: string, kind: string): Promise<(new (o: unknown) => { validate(): void }) | undefined> {
  try {
    const mod = (await import(`kubernetes-models/${apiVersion}`)) as Record<string, unknown>;
    return mod[kind] as new (o: unknown) => { validate(): void };
  } catch {
    return undefined;
  }
}

/** Whether a kind is one of Kubernetes' own (not a custom resource). */
export function isBuiltIn(o: K8sObject): boolean {
  // The API groups of Kubernetes itself: none, or one of *.k8s.io without a dash (custom groups
  // such as security-profiles-operator.x-k8s.io may reuse a kind's name: SeccompProfile).
  const group = o.apiVersion.includes('/') ? o.apiVersion.split('/')[0]! : '';
  const kubernetes = group === '' || !group.includes('.') || /^[a-z]+(\.[a-z]+)*\.k8s\.io$/.test(group);
  return kubernetes && model(className(o.apiVersion, o.kind)) !== undefined;
}

/** Every way the object breaks the Kubernetes API's schema; empty when it is valid. */
export async function k8sErrors(o: K8sObject): Promise<string[]> {
  const name = className(o.apiVersion, o.kind);
  const errors: string[] = [];
  if (model(name) === undefined) return [`${o.apiVersion} ${o.kind}: not a Kubernetes type`];
  walk(name, o, `${o.kind}/${o.metadata.name}`, errors);
  const Typed = await typedModel(o.apiVersion, o.kind);
  if (Typed === undefined) errors.push(`${o.apiVersion} ${o.kind}: kubernetes-models has no such model`);
  else {
    try {
      new Typed(o).validate();
    } catch (err) {
      errors.push(`${o.kind}/${o.metadata.name}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }
  return errors;
}
