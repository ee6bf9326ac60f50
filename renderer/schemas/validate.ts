/**
 * Runs a request schema over a parsed JSON body and turns every failure into one
 * ValidationFailure naming each failing field by path (spec Part 7, 400; docs/architecture.md §6:
 * `abortEarly: false`, extra fields refused, never dropped).
 */
import { ObjectSchema, ValidationError, type AnyObject, type InferType } from 'yup';
import { ValidationFailure, type FieldIssue } from '../../lib/errors.ts';

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Every key of `value` the schema does not know, nested objects included, as issues. */
export function unknownFields(schema: ObjectSchema<AnyObject>, value: unknown, prefix = ''): FieldIssue[] {
  if (!isPlainObject(value)) return [];
  const issues: FieldIssue[] = [];
  for (const key of Object.keys(value)) {
    const path = prefix === '' ? key : `${prefix}.${key}`;
    // Own fields only: `__proto__` and `constructor` (own keys of a parsed body) must not find
    // Object.prototype's members and pass as known.
    const field = Object.hasOwn(schema.fields, key) ? schema.fields[key] : undefined;
    if (field === undefined) {
      issues.push({ path, message: `${path} is not a known field` });
    } else if (field instanceof ObjectSchema) {
      issues.push(...unknownFields(field, value[key], path));
    }
  }
  return issues;
}

/** The validated request with defaults applied, or a thrown ValidationFailure. */
export async function validateBody<S extends ObjectSchema<AnyObject>>(schema: S, body: unknown): Promise<InferType<S>> {
  if (!isPlainObject(body)) {
    throw new ValidationFailure([{ path: 'body', message: 'body must be a JSON object' }]);
  }
  const issues = unknownFields(schema, body);
  let value: InferType<S> | undefined;
  try {
    value = (await schema.validate(body, { abortEarly: false })) as InferType<S>;
  } catch (err) {
    // An unknown field can trip the schema itself (a `__proto__` key); its issue is the answer.
    if (!(err instanceof ValidationError)) {
      if (issues.length > 0) throw new ValidationFailure(issues);
      throw err;
    }
    const failures = err.inner.length > 0 ? err.inner : [err];
    for (const f of failures) issues.push({ path: f.path ?? 'body', message: f.message });
  }
  if (issues.length > 0 || value === undefined) throw new ValidationFailure(issues);
  return value;
}
