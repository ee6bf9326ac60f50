/**
 * The Kubernetes API server as Helm's `lookup` reads it, for `helm template --dry-run=server`: the
 * version, legacy discovery (/api, /apis and each group version's resources) and GET of the
 * Secrets a test puts in, 404 with a Status for any other object. A fake because no API server
 * runs here; it answers with the API's own JSON shapes, unaggregated discovery as every client
 * falls back to.
 */
import { writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** Group versions and the kinds the chart renders in them (discovery answers these, so Capabilities knows them). */
const GROUPS: Record<string, [string, string][]> = {
  v1: [['secrets', 'Secret'], ['services', 'Service'], ['serviceaccounts', 'ServiceAccount'], ['configmaps', 'ConfigMap'], ['pods', 'Pod']],
  'apps/v1': [['deployments', 'Deployment']],
  'batch/v1': [['jobs', 'Job']],
  'policy/v1': [['poddisruptionbudgets', 'PodDisruptionBudget']],
  'networking.k8s.io/v1': [['networkpolicies', 'NetworkPolicy']],
  'rbac.authorization.k8s.io/v1': [['roles', 'Role'], ['rolebindings', 'RoleBinding']],
  'autoscaling/v2': [['horizontalpodautoscalers', 'HorizontalPodAutoscaler']],
  'tintype.dev/v1alpha1': [['renderpools', 'RenderPool']],
};

export interface FakeCluster {
  /** A kubeconfig file that points at this server. */
  kubeconfig: string;
  /** Puts a Secret with these keys (values are base64-encoded as the API answers them). */
  putSecret(namespace: string, name: string, data: Record<string, string>): void;
  close(): Promise<void>;
}

function resourceList(groupVersion: string): unknown {
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion,
    resources: GROUPS[groupVersion]!.map(([name, kind]) => ({ name, singularName: '', namespaced: true, kind, verbs: ['get', 'list', 'create', 'update', 'patch', 'delete'] })),
  };
}

export async function startFakeCluster(kubeconfig: string): Promise<FakeCluster> {
  const secrets = new Map<string, Record<string, string>>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const p = url.pathname;
    if (p === '/version') return send(200, { major: '1', minor: '35', gitVersion: 'v1.35.0', platform: 'linux/amd64' });
    if (p === '/api') return send(200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
    if (p === '/api/v1') return send(200, resourceList('v1'));
    if (p === '/apis') {
      const groups = Object.keys(GROUPS).filter((gv) => gv.includes('/')).map((gv) => {
        const [group, version] = gv.split('/') as [string, string];
        return { name: group, versions: [{ groupVersion: gv, version }], preferredVersion: { groupVersion: gv, version } };
      });
      return send(200, { kind: 'APIGroupList', apiVersion: 'v1', groups });
    }
    const gv = /^\/apis\/([^/]+\/[^/]+)$/.exec(p);
    if (gv !== null && GROUPS[gv[1]!] !== undefined) return send(200, resourceList(gv[1]!));
    const secret = /^\/api\/v1\/namespaces\/([^/]+)\/secrets\/([^/]+)$/.exec(p);
    if (req.method === 'GET' && secret !== null && secrets.has(`${secret[1]}/${secret[2]}`)) {
      return send(200, { kind: 'Secret', apiVersion: 'v1', metadata: { name: secret[2], namespace: secret[1] }, type: 'Opaque', data: secrets.get(`${secret[1]}/${secret[2]}`) });
    }
    return send(404, { kind: 'Status', apiVersion: 'v1', status: 'Failure', message: `${p} not found`, reason: 'NotFound', code: 404 });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  writeFileSync(kubeconfig, JSON.stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'fake', cluster: { server: `http://127.0.0.1:${port}` } }],
    users: [{ name: 'fake', user: { token: 'fake' } }],
    contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'fake', namespace: 'render' } }],
    'current-context': 'fake',
  }));
  return {
    kubeconfig,
    putSecret(namespace, name, data) {
      secrets.set(`${namespace}/${name}`, Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString('base64')])));
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
