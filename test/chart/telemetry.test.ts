/**
 * The collector outside the cluster (docs/operations.md "Telemetry"): telemetry.headersSecret and
 * telemetry.caSecret reach the tracing roles (policy, the renderer) as lib/telemetry.ts reads them
 * (OTEL_EXPORTER_OTLP_HEADERS from the Secret, OTEL_EXPORTER_OTLP_CERTIFICATE a file of the
 * mounted CA), and Envoy checks the collector against that CA; every object stays valid.
 */
import t from 'tap';
import { loadConfig } from '../../lib/config.ts';
import { named, render, RELEASE } from '../helm.ts';
import { isBuiltIn, k8sErrors } from './k8s-schema.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */

const SET = ['--set', 'telemetry.otlpEndpoint=https://otel.example.com:4318/otel,telemetry.headersSecret.name=otlp-headers,telemetry.headersSecret.key=h,telemetry.caSecret.name=otlp-ca'];

t.test('the headers Secret and the CA reach policy and the renderer as the roles read them', async (t) => {
  const objects = await render('default-values.yaml', SET);
  for (const o of objects.filter(isBuiltIn)) t.same(await k8sErrors(o), [], `${o.kind}/${o.metadata.name}`);
  for (const role of ['policy', 'renderer']) {
    const pod = (named(objects, 'Deployment', `${RELEASE}-${role}`) as any).spec.template.spec;
    const c = pod.containers[0];
    const env = Object.fromEntries(c.env.map((e: any) => [e.name, e]));
    t.same(env['OTEL_EXPORTER_OTLP_HEADERS'].valueFrom, { secretKeyRef: { name: 'otlp-headers', key: 'h' } }, `${role}: the headers from the Secret`);
    const caFile = env['OTEL_EXPORTER_OTLP_CERTIFICATE'].value as string;
    const mount = c.volumeMounts.find((m: any) => caFile.startsWith(`${m.mountPath}/`));
    t.ok(mount?.readOnly, `${role}: ${caFile} is in a read-only mount`);
    const volume = pod.volumes.find((v: any) => v.name === mount.name);
    t.equal(volume.secret.secretName, 'otlp-ca', `${role}: of the CA Secret`);
    t.same(volume.secret.items, [{ key: 'ca.crt', path: caFile.slice(mount.mountPath.length + 1) }], `${role}: its key at that file`);
    // What lib/config.ts makes of them, the Secret's value given as the kubelet would.
    const config = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: env['OTEL_EXPORTER_OTLP_ENDPOINT'].value, OTEL_EXPORTER_OTLP_HEADERS: 'x-token=abc', OTEL_EXPORTER_OTLP_CERTIFICATE: caFile });
    t.same({ headers: config.otelHeaders, ca: config.otelCaFile }, { headers: { 'x-token': 'abc' }, ca: '/etc/tintype/otel-ca/ca.crt' });
  }
  const envoyPod = (named(objects, 'Deployment', `${RELEASE}-envoy`) as any).spec.template.spec;
  const envoyConfig = (named(objects, 'ConfigMap', `${RELEASE}-envoy`) as any).data['envoy.yaml'] as string;
  t.match(envoyConfig, 'trusted_ca: { filename: /etc/tintype/otel-ca/ca.crt }', "Envoy checks the collector against the CA");
  t.ok(envoyPod.containers[0].volumeMounts.some((m: any) => m.mountPath === '/etc/tintype/otel-ca'), "mounted in Envoy's container");
});

t.test('without them: no variables, no mounts, the system CAs', async (t) => {
  const objects = await render('default-values.yaml', ['--set', 'telemetry.otlpEndpoint=https://otel.example.com']);
  const text = JSON.stringify(objects);
  t.notMatch(text, /OTEL_EXPORTER_OTLP_(HEADERS|CERTIFICATE)|otel-ca/);
  t.match((named(objects, 'ConfigMap', `${RELEASE}-envoy`) as any).data['envoy.yaml'], 'trusted_ca: { filename: /etc/ssl/certs/ca-certificates.crt }');
});
