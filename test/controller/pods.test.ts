/** What the controller reads from a renderer pod's spec (controller/pods.ts): its configured slots. */
import t from 'tap';
import { configuredSlots } from '../../controller/pods.ts';

const spec = (...env: object[]): object => ({ containers: [{ name: 'renderer', env }] });

t.test('the slots a pod spec configures', async (t) => {
  t.equal(configuredSlots(spec({ name: 'TINTYPE_SLOTS', value: '4' })), 4, 'as set');
  t.equal(configuredSlots(spec({ name: 'OTHER', value: '9' })), 2, 'unset: the renderer\'s default');
  t.equal(configuredSlots({}), 2, 'no containers: the default');
  t.equal(configuredSlots(spec({ name: 'TINTYPE_SLOTS', valueFrom: { configMapKeyRef: { name: 'x', key: 'y' } } })), undefined, 'from elsewhere: the spec does not say');
  t.equal(configuredSlots(spec({ name: 'TINTYPE_SLOTS', value: '0' })), undefined, 'below the renderer\'s bound');
  t.equal(configuredSlots(spec({ name: 'TINTYPE_SLOTS', value: '65' })), undefined, 'above it');
  t.equal(configuredSlots(spec({ name: 'TINTYPE_SLOTS', value: '2' }, { name: 'TINTYPE_SLOTS', value: '3' })), 3, 'the last of two wins, as in Kubernetes');
});
