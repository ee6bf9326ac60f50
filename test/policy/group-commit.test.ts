/** policy/store/sqlite.ts groupCommit: one transaction per event-loop turn, each item answered as if alone. */
import t from 'tap';
import Database from '../../policy/store/sqlite-driver.ts';
import { groupCommit } from '../../policy/store/sqlite.ts';

t.test('items of one turn commit together, in order; a failing item fails alone', async (t) => {
  const db = new Database(':memory:');
  t.teardown(() => db.close());
  db.exec('CREATE TABLE r (v INTEGER PRIMARY KEY)');
  const insert = db.prepare('INSERT INTO r (v) VALUES (?)');
  const group = groupCommit(db, (v: number) => {
    t.ok(db.inTransaction, 'inside a transaction');
    insert.run(v);
    return (db.prepare('SELECT count(*) AS n FROM r').get() as { n: number }).n;
  });

  const first = await Promise.all([1, 2, 3].map((v) => group.run(v)));
  t.same(first, [1, 2, 3], 'each item sees the ones before it in the group, in arrival order');

  // 2 is taken: that item fails; 4 and 5 of the same turn still commit.
  const mixed = await Promise.allSettled([4, 2, 5].map((v) => group.run(v)));
  t.equal(mixed[0]!.status, 'fulfilled');
  t.equal(mixed[1]!.status, 'rejected', 'the duplicate is refused');
  t.equal(mixed[2]!.status, 'fulfilled');
  t.same((db.prepare('SELECT v FROM r ORDER BY v').all() as Array<{ v: number }>).map((r) => r.v), [1, 2, 3, 4, 5], 'the others committed');
});

t.test('a lone failing item is rejected with its own error', async (t) => {
  const db = new Database(':memory:');
  t.teardown(() => db.close());
  db.exec('CREATE TABLE r (v INTEGER PRIMARY KEY)');
  const insert = db.prepare('INSERT INTO r (v) VALUES (?)');
  const group = groupCommit(db, (v: number) => insert.run(v).changes);
  t.equal(await group.run(1), 1);
  await t.rejects(group.run(1), { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' });
});
