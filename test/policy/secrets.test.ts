import t from 'tap';
import { SECRET_SHAPE, hashSecret, lookupHash, newLeaseId, newSecret } from '../../policy/secrets.ts';

t.test('secrets: sk_ and 32 random bytes, URL-safe; stored as a hash', async (t) => {
  const seen = new Set<string>();
  for (let i = 0; i < 200; i++) {
    const s = newSecret();
    t.match(s, SECRET_SHAPE);
    t.ok(Buffer.from(s.slice(3), 'base64url').length >= 32);
    seen.add(s);
  }
  t.equal(seen.size, 200, 'no repeats');
  const s = newSecret();
  t.equal(lookupHash(`Bearer ${s}`), hashSecret(s));
  t.notOk(hashSecret(s).includes(s.slice(3)));
});

t.test('every header gives something to look up, and malformed ones match no issued secret', async (t) => {
  const s = newSecret();
  for (const h of [undefined, '', 'Bearer', `Bearer  ${s}`, `Bearer ${s} x`, `Token ${s}`, `Bearer ${s.slice(0, -1)}`]) {
    const v = lookupHash(h);
    t.match(v, /^[0-9a-f]{64}$/, String(h === undefined ? 'missing' : JSON.stringify(h).replace(s, 'SECRET')));
    t.not(v, hashSecret(s));
  }
});

t.test('lease ids: 128 random bits in base64url, none repeated across refills of the random pool', (t) => {
  const ids = Array.from({ length: 2_000 }, () => newLeaseId());
  t.same(ids.filter((id) => !/^[A-Za-z0-9_-]{22}$/.test(id)), [], 'every id is 22 base64url characters (16 bytes)');
  t.equal(new Set(ids).size, 2_000, 'no repeats');
  t.end();
});
