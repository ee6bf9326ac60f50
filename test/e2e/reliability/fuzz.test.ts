/**
 * Malformed JSON bodies (docs/operations.md "What it survives"): a seeded 500 here, ten thousand
 * in `npm run bench -- soak`. Never a 5xx, never a dropped connection, and the service still
 * renders afterwards.
 */
import t from 'tap';
import { fuzzBodies } from './fuzz.ts';

t.setTimeout(600_000);
const SEED = Number(process.env.TINTYPE_FUZZ_SEED ?? Date.now() % 100_000);

t.test(`fuzzed bodies never get a 5xx (seed ${SEED})`, async (t) => {
  const f = await fuzzBodies({ bodies: 500, seed: SEED });
  t.equal(f.fuzzed_bodies, 500);
  t.equal(f.fuzzed_5xx, 0, `no 5xx: ${JSON.stringify(f.fuzzed_statuses)}`);
  t.notOk(f.fuzzed_statuses['no answer'], 'every body was answered');
  t.ok(f.renders_after, 'an ordinary render was served afterwards');
});
