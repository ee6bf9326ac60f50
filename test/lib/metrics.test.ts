import t from 'tap';
import { Registry } from '../../lib/metrics.ts';

t.test('a series is one per label set, whatever order its labels are given in, its values escaped as the exposition format says', async (t) => {
  const registry = new Registry();
  const calls = registry.counter('tintype_test_total', 'calls');
  calls.inc({ outcome: 'granted', operation: 'pdf' });
  calls.inc({ operation: 'pdf', outcome: 'granted' }, 2);
  calls.inc({ reason: 'a "quoted" back\\slash\nand a line' });
  calls.inc();
  t.equal(calls.get({ outcome: 'granted', operation: 'pdf' }), 3);
  const lines = registry.render().split('\n').filter((l) => l.startsWith('tintype_test_total'));
  t.same(lines, [
    'tintype_test_total{operation="pdf",outcome="granted"} 3',
    'tintype_test_total{reason="a \\"quoted\\" back\\\\slash\\nand a line"} 1',
    'tintype_test_total 1',
  ]);
});
