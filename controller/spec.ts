/**
 * The RenderPool resource as the controller reads it (docs/helm.md, "Scaling with the operator"): group, version,
 * names, and the spec's defaults and bounds. charts/tintype/crds/renderpools.tintype.dev.yaml (the CRD's one home) states the
 * same in the API server's terms; test/controller/crd.test.ts holds the two together.
 */

export const GROUP = 'tintype.dev';
export const VERSION = 'v1alpha1';
export const KIND = 'RenderPool';
export const PLURAL = 'renderpools';
/** Name of the Lease the replicas elect a leader with, and of the controller in Events. */
export const CONTROLLER_NAME = 'tintype-controller';

/** The spec's defaults, as the CRD's schema applies them. */
export const SPEC_DEFAULTS = Object.freeze({
  minReplicas: 1,
  maxReplicas: 10,
  targetBusyRatio: 0.6,
  scaleUpStabilizationSeconds: 0,
  scaleDownStabilizationSeconds: 300,
});

/** A RenderPool's spec with every default filled in. */
export interface PoolSpec {
  deploymentName: string;
  minReplicas: number;
  maxReplicas: number;
  /** The share of usable slots that may be busy (0.1 to 1). */
  targetBusyRatio: number;
  scaleUpStabilizationSeconds: number;
  scaleDownStabilizationSeconds: number;
}

const num = (v: unknown, fallback: number): number => (typeof v === 'number' && Number.isFinite(v) ? v : fallback);

/**
 * The spec of a RenderPool object with defaults filled in, or a reason it cannot be used. The
 * API server already enforces the schema; this guards against an object written before it.
 */
export function readSpec(raw: unknown): { spec: PoolSpec } | { invalid: string } {
  const s = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
  if (typeof s.deploymentName !== 'string' || s.deploymentName === '') return { invalid: 'spec.deploymentName is required' };
  const spec: PoolSpec = {
    deploymentName: s.deploymentName,
    minReplicas: Math.floor(num(s.minReplicas, SPEC_DEFAULTS.minReplicas)),
    maxReplicas: Math.floor(num(s.maxReplicas, SPEC_DEFAULTS.maxReplicas)),
    targetBusyRatio: num(s.targetBusyRatio, SPEC_DEFAULTS.targetBusyRatio),
    scaleUpStabilizationSeconds: Math.max(0, num(s.scaleUpStabilizationSeconds, SPEC_DEFAULTS.scaleUpStabilizationSeconds)),
    scaleDownStabilizationSeconds: Math.max(0, num(s.scaleDownStabilizationSeconds, SPEC_DEFAULTS.scaleDownStabilizationSeconds)),
  };
  if (spec.minReplicas < 0) return { invalid: 'spec.minReplicas must be at least 0' };
  if (spec.maxReplicas < 1) return { invalid: 'spec.maxReplicas must be at least 1' };
  if (spec.maxReplicas < spec.minReplicas) return { invalid: 'spec.maxReplicas must be at least spec.minReplicas' };
  if (spec.targetBusyRatio < 0.1 || spec.targetBusyRatio > 1) return { invalid: 'spec.targetBusyRatio must be from 0.1 to 1' };
  return { spec };
}
