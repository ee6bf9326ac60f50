/**
 * values.schema.json covers every value and refuses any other at every level: each object in it
 * names its properties with additionalProperties false (or is a map of strings: labels,
 * selectors), values.yaml and every ci file satisfy it, and each value of values.yaml is described.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import t from 'tap';
import { parse } from 'yaml';
import { CHART, CI_VALUES } from '../helm.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
const schema = JSON.parse(readFileSync(path.join(CHART, 'values.schema.json'), 'utf8'));
const defaults = parse(readFileSync(path.join(CHART, 'values.yaml'), 'utf8'));

function objectSchemas(s: any, at: string, out: [string, any][]): void {
  if (s === null || typeof s !== 'object') return;
  if (s.type === 'object' || (Array.isArray(s.type) && s.type.includes('object'))) out.push([at, s]);
  for (const [k, v] of Object.entries(s.properties ?? {})) objectSchemas(v, `${at}.${k}`, out);
  if (s.items) objectSchemas(s.items, `${at}[]`, out);
  if (typeof s.additionalProperties === 'object') objectSchemas(s.additionalProperties, `${at}.*`, out);
}

t.test('every object level refuses names it does not know', async (t) => {
  const all: [string, any][] = [];
  objectSchemas(schema, '', all);
  t.ok(all.length > 40, `${all.length} object schemas`);
  for (const [at, s] of all) {
    const closed = s.additionalProperties === false;
    const stringMap = s.properties === undefined && s.additionalProperties?.type === 'string';
    // A Kubernetes type passed through as given (affinity, an EnvVar, a spread constraint):
    // render.test.ts holds the rendered object to the Kubernetes API, unknown fields refused.
    const kubernetes = /^Kubernetes [A-Za-z]+, checked once rendered$/.test(s.$comment ?? '');
    // `global`: an umbrella chart's values, open by design and read by nothing here.
    const global = at === '.global';
    t.ok(closed || stringMap || kubernetes || global, `${at || '(root)'}: additionalProperties false, a map of strings, or a Kubernetes type`);
  }
});

t.test('every value in values.yaml is described by the schema, and the schema describes no value values.yaml lacks', async (t) => {
  const walk = (v: any, s: any, at: string): void => {
    if (v === null || typeof v !== 'object' || Array.isArray(v) || s?.properties === undefined) return;
    for (const k of Object.keys(v)) t.ok(k in s.properties, `${at}.${k} is described`);
    for (const k of Object.keys(v)) walk(v[k], s.properties[k], `${at}.${k}`);
  };
  walk(defaults, schema, '');
});

t.test('no value that has a default is required, so an upgrade from an earlier chart or a value set to null passes', async (t) => {
  // Helm drops a null value and fills what is missing from values.yaml: requiring it would refuse
  // values an earlier chart's release never had (charts/tintype/UPGRADING.md). Lists' items, which
  // have no defaults, may still require their fields.
  const walk = (s: any, at: string): void => {
    if (s === null || typeof s !== 'object') return;
    if (s.properties !== undefined) t.same(s.required ?? [], [], `${at || '(root)'} requires nothing`);
    for (const [k, v] of Object.entries(s.properties ?? {})) walk(v, `${at}.${k}`);
  };
  walk(schema, '');
  const ajv = new (Ajv2020 as any)({ strict: false, allErrors: true });
  t.ok(ajv.compile(schema)({}), 'no values at all satisfy the schema');
});

t.test('values.yaml and each ci file (merged over it) satisfy the schema', async (t) => {
  const ajv = new (Ajv2020 as any)({ strict: false, allErrors: true });
  const validate = ajv.compile(schema);
  t.ok(validate(defaults), JSON.stringify(validate.errors));
  const merge = (a: any, b: any): any => {
    if (a === null || typeof a !== 'object' || Array.isArray(a) || b === null || typeof b !== 'object' || Array.isArray(b)) return b;
    const out = { ...a };
    for (const [k, v] of Object.entries(b)) out[k] = k in a ? merge(a[k], v) : v;
    return out;
  };
  for (const f of CI_VALUES) {
    const merged = merge(defaults, parse(readFileSync(path.join(CHART, 'ci', f), 'utf8')));
    t.ok(validate(merged), `${f}: ${JSON.stringify(validate.errors)}`);
  }
});
