/**
 * The lifecycle group every command runs its parts under (lib/lifecycle.ts): started in order,
 * stopped in reverse, a failed stop logged and the next part stopped all the same; a failed start
 * stops what the group holds, the failed part included, and nothing starts once it is stopping.
 */
import t from 'tap';
import { lifecycleGroup } from '../../lib/lifecycle.ts';
import { createLogger } from '../../lib/log.ts';

function recorder(): { events: string[]; logged: Array<Record<string, unknown>>; part(name: string, fail?: 'start' | 'stop'): { start(): Promise<void>; stop(): Promise<void> } } {
  const events: string[] = [];
  const logged: Array<Record<string, unknown>> = [];
  return {
    events,
    logged,
    part: (name, fail) => ({
      async start() {
        events.push(`start ${name}`);
        if (fail === 'start') throw new Error(`${name} would not start`);
      },
      async stop() {
        events.push(`stop ${name}`);
        if (fail === 'stop') throw new Error(`${name} would not stop`);
      },
    }),
  };
}

const loggerInto = (logged: Array<Record<string, unknown>>) =>
  createLogger('test', { sink: (line) => logged.push(JSON.parse(line) as Record<string, unknown>) });

t.test('starts in order, stops in reverse, logs a failed stop and stops the rest', async (t) => {
  const r = recorder();
  const group = lifecycleGroup(loggerInto(r.logged), 'parts.stop_failed');
  group.add({ stop: () => void r.events.push('release') });
  await group.start(r.part('a'), r.part('b', 'stop'));
  await group.start(r.part('c'));
  await group.stop();
  t.same(r.events, ['start a', 'start b', 'start c', 'stop c', 'stop b', 'stop a', 'release']);
  t.same(r.logged.map((l) => [l.event, l.message]), [['parts.stop_failed', 'b would not stop']]);
  await group.stop();
  t.equal(r.events.length, 7, 'a second stop stops nothing again');
});

t.test('a failed start stops every part the group holds, the failed one too, and rethrows', async (t) => {
  const r = recorder();
  const group = lifecycleGroup(loggerInto(r.logged));
  await t.rejects(group.start(r.part('a'), r.part('b', 'start'), r.part('c')), { message: 'b would not start' });
  t.same(r.events, ['start a', 'start b', 'stop b', 'stop a']);
});

t.test('once stopping, the group starts nothing more', async (t) => {
  const r = recorder();
  const group = lifecycleGroup(loggerInto(r.logged));
  let release!: () => void;
  const slow = { start: () => new Promise<void>((resolve) => (release = resolve)), stop: async () => void r.events.push('stop slow') };
  const starting = group.start(slow, r.part('after'));
  await group.stop();
  release();
  await starting;
  t.same(r.events, ['stop slow'], 'the part being started is stopped; the one after it never starts');
});
