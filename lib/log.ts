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

const SECRET = /sk_[A-Za-z0-9_-]{8,}/g;

/** Masks anything shaped like an API key secret. */
export function redact(text: string): string {
  return text.replace(SECRET, 'sk_[redacted]');
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
