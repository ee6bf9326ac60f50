/**
 * Structured logging: one JSON object per line on stderr. Callers pass named fields, never a
 * request's URL, HTML or API key (docs/architecture.md §6); `redact` is the last line of defence for
 * bearer secrets that might slip into a message.
 */
export type Level = 'debug' | 'info' | 'warn' | 'error';
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type Fields = Record<string, string | number | boolean | null | undefined>;

/** A sink for log lines; tests pass one that collects lines. */
export type LogSink = (line: string) => void;

export interface Logger {
  debug(event: string, fields?: Fields): void;
  info(event: string, fields?: Fields): void;
  warn(event: string, fields?: Fields): void;
  error(event: string, fields?: Fields): void;
  /** A logger that adds `fields` to every line. */
  child(fields: Fields): Logger;
}

/** A percent sign, itself percent-encoded any number of times (`%`, `%25`, `%2525`). */
const PERCENT = '%(?:25)*';
/**
 * A key-shaped secret (`sk_` and at least 8 more characters) in any spelling a URL allows: each
 * character literal or percent-encoded (`sk%5F…`, `%73k_…`, encoded twice), since an og query is
 * logged as it came.
 */
const SECRET = new RegExp(`(?:s|${PERCENT}73)(?:k|${PERCENT}6[bB])(?:_|${PERCENT}5[fF])(?:[A-Za-z0-9_-]|${PERCENT}[0-9A-Fa-f]{2}){8,}`, 'g');
/** A query parameter in a logged line: what leads it, its name and its value, as written. */
const PARAM = /([?&"])([^=&"\s]+)=([^&"\s]*)/g;
/** Parameter names whose value is a key whatever it holds, compared once decoded. */
const KEY_PARAM = /^(?:api[\s_.-]?key|apikey|key|(?:access[\s_.-]?)?token|secret)$/i;

/** `text` percent-decoded until it no longer changes (at most 4 rounds); as written if it is not valid. */
function decoded(text: string): string {
  let t = text;
  for (let i = 0; i < 4; i++) {
    let next: string;
    try {
      next = decodeURIComponent(t.replace(/\+/g, ' '));
    } catch {
      return t;
    }
    if (next === t) return t;
    t = next;
  }
  return t;
}

/**
 * Masks anything shaped like an API key secret, however percent-encoded, and drops the value of
 * any query parameter named like a key (`api_key`, `api%5Fkey`, `token`, …) whatever it holds.
 */
export function redact(text: string): string {
  return text
    .replace(PARAM, (all: string, lead: string, name: string, value: string) => (value !== '' && KEY_PARAM.test(decoded(name).trim()) ? `${lead}${name}=[redacted]` : all))
    .replace(SECRET, 'sk_[redacted]');
}

export function createLogger(
  role: string,
  options: { level?: Level; sink?: LogSink; base?: Fields } = {},
): Logger {
  const min = ORDER[options.level ?? 'info'];
  const sink = options.sink ?? ((line: string) => process.stderr.write(line + '\n'));
  const base = { role, ...options.base };
  const emit = (level: Level, event: string, fields?: Fields): void => {
    if (ORDER[level] < min) return;
    sink(redact(JSON.stringify({ time: new Date().toISOString(), level, event, ...base, ...fields })));
  };
  return {
    debug: (e, f) => emit('debug', e, f),
    info: (e, f) => emit('info', e, f),
    warn: (e, f) => emit('warn', e, f),
    error: (e, f) => emit('error', e, f),
    child: (fields) => createLogger(role, { ...options, base: { ...options.base, ...fields } }),
  };
}

/**
 * `logger`, with the lines of `events` written at debug instead of info while `quiet()` holds: the
 * guard's decisions of the start-up self-test, which proves the walls with over a hundred refused
 * requests before the first render (docs/security.md "Start-up self-test"); its passing is one
 * info line of its own. Children keep the rule.
 */
export function quietWhile(logger: Logger, events: ReadonlySet<string>, quiet: () => boolean): Logger {
  const info = (event: string, fields?: Fields): void => (events.has(event) && quiet() ? logger.debug(event, fields) : logger.info(event, fields));
  return { ...logger, info, child: (fields) => quietWhile(logger.child(fields), events, quiet) };
}
