/**
 * Checks a real answer against the OpenAPI document: the status is one the operation
 * declares, every required header is present and every declared header matches its schema,
 * the content type is one declared, and a JSON body validates. Returns the problems found.
 */
import { createRequire } from 'node:module';
import type { IncomingHttpHeaders } from 'node:http';
import { openapiDocument } from '../../renderer/openapi/document.ts';

const require = createRequire(import.meta.url);
// ajv's 2020-12 build (OpenAPI 3.1 schemas are JSON Schema 2020-12); CJS modules.
const Ajv2020 = require('ajv/dist/2020').default as new (o: object) => any;
const addFormats = require('ajv-formats').default as (ajv: unknown) => void;

const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const DOC_ID = 'https://tintype.invalid/openapi.json';
ajv.addSchema({ ...openapiDocument, $id: DOC_ID });

type Obj = Record<string, any>;
const doc = openapiDocument as unknown as Obj;

function deref(node: Obj): Obj {
  let n = node;
  while (typeof n['$ref'] === 'string') {
    const parts = (n['$ref'] as string).replace(/^#\//, '').split('/');
    n = parts.reduce((o: Obj, k) => o[k], doc);
  }
  return n;
}

function pointer(path: string[]): string {
  // A JSON pointer into the document for ajv, following $refs of responses and headers.
  return `${DOC_ID}#/${path.map((p) => p.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
}

function validate(schemaPath: string[], value: unknown): string[] {
  const fn = ajv.getSchema(pointer(schemaPath));
  if (fn === undefined) return [`no schema at ${schemaPath.join('/')}`];
  if (fn(value)) return [];
  return (fn.errors as Obj[]).map((e) => `${e['instancePath'] || '(root)'} ${e['message']}`);
}

export interface Observed {
  method: string;
  /** Path without query, e.g. /v1/og. */
  path: string;
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** Every way `answer` departs from the document; empty when it conforms. */
export function checkAnswer(answer: Observed): string[] {
  const problems: string[] = [];
  const op = doc['paths']?.[answer.path]?.[answer.method.toLowerCase()] as Obj | undefined;
  if (op === undefined) return [`${answer.method} ${answer.path} is not in the document`];
  const raw = op['responses'][String(answer.status)] as Obj | undefined;
  if (raw === undefined) return [`${answer.method} ${answer.path} declares no ${answer.status}`];
  // The response object's own location, for ajv pointers.
  const responsePath = typeof raw['$ref'] === 'string'
    ? (raw['$ref'] as string).replace(/^#\//, '').split('/')
    : ['paths', answer.path, answer.method.toLowerCase(), 'responses', String(answer.status)];
  const res = deref(raw);

  for (const [name, h] of Object.entries((res['headers'] ?? {}) as Obj)) {
    const declared = deref(h as Obj);
    const value = answer.headers[name];
    if (value === undefined) {
      if (declared['required'] === true) problems.push(`header ${name} is required on ${answer.status}`);
      continue;
    }
    const schemaPath = typeof (h as Obj)['$ref'] === 'string'
      ? [...((h as Obj)['$ref'] as string).replace(/^#\//, '').split('/'), 'schema']
      : [...responsePath, 'headers', name, 'schema'];
    for (const p of validate(schemaPath, value)) problems.push(`header ${name}: ${p}`);
  }

  const contentType = String(answer.headers['content-type'] ?? '').split(';', 1)[0]!.trim();
  const content = (res['content'] ?? {}) as Obj;
  if (!(contentType in content)) {
    problems.push(`content-type ${contentType || '(none)'} is not one of ${Object.keys(content).join(', ')}`);
    return problems;
  }
  if (contentType === 'application/json') {
    let body: unknown;
    try {
      body = JSON.parse(answer.body.toString('utf8'));
    } catch {
      problems.push('body is not JSON');
      return problems;
    }
    for (const p of validate([...responsePath, 'content', contentType, 'schema'], body)) problems.push(`body ${p}`);
  } else if (answer.body.length === 0) {
    problems.push(`empty ${contentType} body`);
  }
  return problems;
}

/** Validates a request body against an operation's request schema (for building test bodies). */
export function checkRequest(path: string, body: unknown): string[] {
  const op = doc['paths'][path]['post'] as Obj;
  const name = (op['requestBody']['content']['application/json']['schema']['$ref'] as string).split('/').at(-1)!;
  return validate(['components', 'schemas', name], body);
}
