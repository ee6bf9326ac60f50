/**
 * The chart's pre-install/pre-upgrade hook Job as Helm runs it before the release's pods: its one
 * container's arguments (the tintype image's entrypoint is left to the caller's runner) and its
 * environment, Secrets resolved from the render. Policy pods wait for the schema it applies.
 */
import type { K8sObject } from '../../helm.ts';
import { containerEnv } from './pods.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

export async function runMigrationJob(objects: K8sObject[], run: (env: Record<string, string>, argv: string[]) => { exited: Promise<number | null>; output(): string }): Promise<void> {
  const job: any = objects.find((o) => o.kind === 'Job' && o.metadata.annotations?.['helm.sh/hook']?.includes('pre-install'));
  if (job === undefined) throw new Error('no pre-install hook Job: policy pods would wait for their schema forever');
  const c = job.spec.template.spec.containers[0];
  const p = run(containerEnv(c, objects, { namespace: job.metadata.namespace ?? 'default', podName: `${job.metadata.name}-0`, podIP: '' }), ['tintype', ...c.args]);
  const code = await p.exited;
  if (code !== 0) throw new Error(`the migration Job exited ${code}:\n${p.output()}`);
}
