/**
 * The loopback API server keeps to the protocol the controller meets in a cluster: the points
 * below are each from the Kubernetes API documentation ("API Concepts", the patch types, Lease
 * and Event references), so a controller that passes against it does not pass by its leniency.
 */
import t from 'tap';
import { startFakeApiServer } from './fake-apiserver.ts';

t.test('the protocol points', async (t) => {
  const server = await startFakeApiServer();
  t.teardown(() => server.close());
  const call = async (method: string, path: string, body?: unknown, contentType = 'application/json', token = server.token) => {
    const res = await fetch(`${server.url}${path}`, {
      method, headers: { authorization: `Bearer ${token}`, 'content-type': contentType }, ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: res.status, body: await res.json() as any };
  };
  const leases = '/apis/coordination.k8s.io/v1/namespaces/ns/leases';
  const micro = '2026-11-26T10:00:00.123000Z';

  t.equal((await call('GET', leases, undefined, undefined, 'wrong')).status, 401, 'no token, no answer');

  const created = await call('POST', leases, { metadata: { name: 'l' }, spec: { holderIdentity: 'a', acquireTime: micro, renewTime: micro, leaseDurationSeconds: 15 } });
  t.equal(created.status, 201, 'Lease create');
  t.equal((await call('POST', leases, { metadata: { name: 'l' }, spec: {} })).body.reason, 'AlreadyExists');
  const short = await call('PUT', `${leases}/l`, { ...created.body, spec: { ...created.body.spec, renewTime: '2026-11-26T10:00:01.123Z' } });
  t.equal(short.status, 400, 'a MicroTime with three digits is refused');
  t.match(short.body.message, /2006-01-02T15:04:05.000000Z07:00/);
  const updated = await call('PUT', `${leases}/l`, { ...created.body, spec: { ...created.body.spec, renewTime: '2026-11-26T10:00:01.123000Z' } });
  t.equal(updated.status, 200, 'Lease update');
  const stale = await call('PUT', `${leases}/l`, created.body);
  t.equal(stale.status, 409, 'a stale resourceVersion is a conflict');
  t.equal(stale.body.reason, 'Conflict');
  t.equal((await call('PATCH', `${leases}/l`, { metadata: { resourceVersion: created.body.metadata.resourceVersion } }, 'application/merge-patch+json')).status, 409,
    'so is a patch carrying one');

  server.apply('deployments', 'ns', { metadata: { name: 'd' }, spec: { replicas: 1, selector: { matchLabels: { app: 'r' } } } });
  const scale = await call('GET', '/apis/apps/v1/namespaces/ns/deployments/d/scale');
  t.match(scale.body, { kind: 'Scale', apiVersion: 'autoscaling/v1', spec: { replicas: 1 }, status: { selector: 'app=r' } });
  t.equal((await call('PATCH', '/apis/apps/v1/namespaces/ns/deployments/d/scale', { spec: { replicas: 3 } }, 'application/strategic-merge-patch+json')).body.spec.replicas, 3,
    'a strategic merge patch of a built-in scale');
  t.equal(server.get('deployments', 'ns', 'd').spec.replicas, 3);
  t.equal(server.get('deployments', 'ns', 'd').metadata.generation, 2, 'the spec moved: a new generation');
  t.equal((await call('PATCH', '/apis/apps/v1/namespaces/ns/deployments/d/scale', { spec: { replicas: 4 } }, 'application/json')).status, 415, 'not a patch type');

  const pools = '/apis/tintype.dev/v1alpha1/namespaces/ns/renderpools';
  const pool = await call('POST', pools, { metadata: { name: 'p' }, spec: { deploymentName: 'd' }, status: { slots: 9 } });
  t.equal(pool.body.status, undefined, 'status is not taken on create');
  t.equal((await call('PATCH', `${pools}/p`, { spec: { maxReplicas: 4 } }, 'application/strategic-merge-patch+json')).status, 415,
    'a custom resource has no strategic merge');
  const main = await call('PATCH', `${pools}/p`, { spec: { maxReplicas: 4 }, status: { slots: 9 } }, 'application/merge-patch+json');
  t.equal(main.body.spec.maxReplicas, 4);
  t.equal(main.body.status, undefined, 'the object ignores status');
  t.equal(main.body.metadata.generation, 2);
  const st = await call('PATCH', `${pools}/p/status`, { spec: { maxReplicas: 9 }, status: { slots: 9 } }, 'application/merge-patch+json');
  t.equal(st.body.status.slots, 9);
  t.equal(st.body.spec.maxReplicas, 4, 'the status subresource ignores spec');
  t.equal(st.body.metadata.generation, 2, 'a status write is not a new generation');

  const list = await call('GET', pools);
  t.equal(list.body.kind, 'RenderPoolList');
  t.equal(list.body.metadata.resourceVersion, server.version());
  server.expireWatches();
  t.equal((await call('GET', `${pools}?resourceVersion=1`)).status, 410, 'a list older than the history is 410 Gone');
  const watch = await fetch(`${server.url}${pools}?watch=true&resourceVersion=1`, { headers: { authorization: `Bearer ${server.token}` } });
  t.equal(watch.status, 200, 'a watch answers 200 ...');
  t.equal(watch.headers.get('transfer-encoding'), 'chunked');
  const line = JSON.parse((await watch.text()).trim());
  t.match(line, { type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } }, '... and says 410 in the stream');
});
