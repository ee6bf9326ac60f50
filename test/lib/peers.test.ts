/** Who a connection's peer is counted as (lib/peers.ts), for the caps on connections per peer. */
import t from 'tap';
import { clientOf } from '../../lib/peers.ts';

t.test('an IPv4 address is itself, a mapped one too, an IPv6 address is its /64', async (t) => {
  t.equal(clientOf('203.0.113.7'), '203.0.113.7');
  t.equal(clientOf('::ffff:203.0.113.7'), '203.0.113.7');
  t.equal(clientOf('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64');
  t.equal(clientOf('2001:0db8:0001:0002:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64');
  t.equal(clientOf('2001:db8::1'), '2001:db8:0:0::/64');
  t.equal(clientOf('::1'), '0:0:0:0::/64');
});
