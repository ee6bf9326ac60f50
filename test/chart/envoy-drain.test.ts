/**
 * Envoy's pod as the chart renders it (docs/helm.md, "Rolling restarts"): its drain helper runs
 * tintype-core, the slim image, tagged with the chart's appVersion, so a new tintype release
 * (image.tag) leaves the edge's pod template as it was and rolls no Envoy pod; its preStop waits
 * for the helper's drain instead of sleeping a fixed time. The drain itself runs against Envoy's
 * admin API in test/envoy/drain.test.ts.
 */
import t from 'tap';
import { named, render, RELEASE } from '../helm.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

const envoyPod = async (set: string): Promise<any> =>
  (named(await render('default-values.yaml', ['--set', set]), 'Deployment', `${RELEASE}-envoy`) as any).spec.template;

t.test('a new tintype release (image.tag) rolls no Envoy pod; the drain helper is tintype-core', async (t) => {
  const before = await envoyPod('image.tag=0.1.0-aaaaaaaaaaaa');
  const after = await envoyPod('image.tag=0.1.1-bbbbbbbbbbbb');
  t.same(after, before, 'the same pod template');
  const drain = before.spec.containers.find((c: any) => c.name === 'drain');
  t.match(drain.image, /^registry\.example\.com\/tintype-core:0\.1\.0$/, "tintype-core at the chart's appVersion");
  t.notMatch(JSON.stringify(before.metadata.labels), /helm\.sh\/chart/, "no chart version on the pod's labels");
  const pinned = await envoyPod('envoy.drain.image.tag=0.1.1,envoy.drain.image.digest=sha256:' + 'b'.repeat(64));
  t.match(pinned.spec.containers.find((c: any) => c.name === 'drain').image, /tintype-core:0\.1\.1@sha256:b{64}$/, 'its own tag and digest when set');
});

t.test("Envoy's preStop is the drain helper's GET /drained, not a fixed sleep", async (t) => {
  const pod = await envoyPod('drainWaitSeconds=15');
  const envoy = pod.spec.containers.find((c: any) => c.name === 'envoy');
  t.same(envoy.lifecycle.preStop, { httpGet: { path: '/drained', port: 9903 } });
  const drain = pod.spec.containers.find((c: any) => c.name === 'drain');
  t.same(drain.ports, [{ name: 'drain', containerPort: 9903, protocol: 'TCP' }]);
  t.ok(drain.env.some((e: any) => e.name === 'TINTYPE_DRAIN_PORT' && e.value === '9903'));
});
