/**
 * The logger's last line of defence (lib/log.ts redact, docs/security.md): a key is never written,
 * however a client percent-encoded it in the og query the edge logs, and a parameter named like a
 * key has its value dropped whatever it holds. Through the logger every role writes with.
 */
import t from 'tap';
import { createLogger } from '../../lib/log.ts';

const KEY = 'sk_' + 'A1b2'.repeat(11);
const TAIL = KEY.slice(3);
const escape = (s: string) => [...s].map((c) => '%' + c.charCodeAt(0).toString(16).toUpperCase()).join('');

/** The og query as a line holds it, and what of it must never appear. */
const HIDDEN: Array<[string, string, string]> = [
  ['literal', `title=${KEY}`, TAIL],
  ['underscore escaped', `title=sk%5F${TAIL}`, TAIL],
  ['lower-case escape', `title=sk%5f${TAIL}`, TAIL],
  ['every prefix letter escaped', `title=%73%6B%5F${TAIL}`, TAIL],
  ['escaped twice', `title=sk%255F${TAIL}`, TAIL],
  ['the secret itself escaped', `title=sk_${escape(TAIL)}`, escape(TAIL)],
  ['api_key, any value', 'template=x&api_key=hello-there', 'hello-there'],
  ['api_key first', 'api_key=hello-there&x=1', 'hello-there'],
  ['API-KEY', 'API-KEY=hello-there', 'hello-there'],
  ['name escaped', 'api%5Fkey=hello-there', 'hello-there'],
  ['name letters escaped', '%61pi_key=hello-there', 'hello-there'],
  ['token', 'x=1&token=hello-there', 'hello-there'],
];

t.test('no spelling of a key reaches a log line', async (t) => {
  const lines: string[] = [];
  const log = createLogger('edge', { sink: (l) => lines.push(l) });
  for (const [name, query, secret] of HIDDEN) {
    log.info('request', { operation: 'og', query });
    const line = lines.at(-1)!;
    t.notOk(line.includes(secret), `${name}: ${line}`);
    t.ok(JSON.parse(line).query.length > 0, `${name}: the rest of the query is still there`);
  }
});

t.test('what is no key is logged as it came', async (t) => {
  const lines: string[] = [];
  const log = createLogger('edge', { sink: (l) => lines.push(l) });
  for (const query of ['title=sk_short', 'title=monkey&keyword=x', 'title=task_list', 'title=my%20key%20words', 'key=']) {
    log.info('request', { query });
    t.equal(JSON.parse(lines.at(-1)!).query, query);
  }
});
