/** How the embedded edge counts a client address against its share of held bodies (envoy/edge/held.ts). */
import t from 'tap';
import { clientOf, heldBodies } from '../../envoy/edge/held.ts';

t.test('an IPv4 address is itself, a mapped one too, an IPv6 address is its /64', async (t) => {
  t.equal(clientOf('203.0.113.7'), '203.0.113.7');
  t.equal(clientOf('::ffff:203.0.113.7'), '203.0.113.7');
  t.equal(clientOf('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  t.equal(clientOf('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64');
  t.equal(clientOf('2001:db8::1'), '2001:db8:0:0::/64');
  t.equal(clientOf('::1'), '0:0:0:0::/64');
});

t.test('a take past the whole budget or past the address share takes nothing', async (t) => {
  const held = heldBodies(100, 60);
  const a = held.forClient('192.0.2.1');
  const b = held.forClient('192.0.2.2');
  t.ok(a.take(60));
  t.notOk(a.take(1), 'past the share');
  t.ok(b.take(40));
  t.notOk(b.take(1), 'past the whole budget');
  t.equal(held.held(), 100);
  a.give(60);
  t.ok(held.forClient('192.0.2.1').take(20), 'a later request from the same address has its share back');
  t.equal(held.held(), 60);
});
