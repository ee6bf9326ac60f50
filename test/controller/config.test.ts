/** The operator's settings (docs/operations.md, "Settings"): defaults, bounds and the variable named in a refusal. */
import t from 'tap';
import { ConfigError, loadConfig } from '../../lib/config.ts';

t.test('defaults', async (t) => {
  const c = loadConfig({});
  t.equal(c.controllerPollMs, 5_000);
  t.equal(c.controllerNamespace, undefined, 'its own namespace');
  t.equal(c.podNamespace, undefined);
  t.equal(c.podName, undefined);
  t.equal(c.kubeconfig, undefined);
  t.equal(c.inCluster, false);
});

t.test('values', async (t) => {
  const c = loadConfig({
    TINTYPE_CONTROLLER_NAMESPACE: 'render', TINTYPE_CONTROLLER_POLL_MS: '100', POD_NAMESPACE: 'ops', POD_NAME: 'controller-7f9c',
    KUBECONFIG: '/etc/kube/config', KUBERNETES_SERVICE_HOST: '10.0.0.1',
  });
  t.same(
    [c.controllerNamespace, c.controllerPollMs, c.podNamespace, c.podName, c.kubeconfig, c.inCluster],
    ['render', 100, 'ops', 'controller-7f9c', '/etc/kube/config', true],
  );
  t.equal(loadConfig({ TINTYPE_CONTROLLER_POLL_MS: '600000' }).controllerPollMs, 600_000);
});

t.test('refusals name the variable', async (t) => {
  const rows: Array<[string, Record<string, string>, RegExp]> = [
    ['poll below 100', { TINTYPE_CONTROLLER_POLL_MS: '99' }, /TINTYPE_CONTROLLER_POLL_MS/],
    ['poll above 600000', { TINTYPE_CONTROLLER_POLL_MS: '600001' }, /TINTYPE_CONTROLLER_POLL_MS/],
    ['poll not a number', { TINTYPE_CONTROLLER_POLL_MS: '5s' }, /TINTYPE_CONTROLLER_POLL_MS/],
    ['namespace with capitals', { TINTYPE_CONTROLLER_NAMESPACE: 'Render' }, /TINTYPE_CONTROLLER_NAMESPACE/],
    ['namespace too long', { POD_NAMESPACE: 'a'.repeat(64) }, /POD_NAMESPACE/],
  ];
  for (const [name, env, message] of rows) {
    t.throws(() => loadConfig(env), message, name);
    t.throws(() => loadConfig(env), ConfigError, name);
  }
});
