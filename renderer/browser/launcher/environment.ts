/**
 * The environment Chromium is started with: built from an allow-list, never inherited. The
 * renderer's own variables hold what a page must never reach (DATABASE_URL, REDIS_URL, lease
 * secrets, collector addresses); a bug in the page process would read them from its environment.
 */

/** Variables passed through when set: how text, dates and times are shown, nothing else. */
const PASSED = new Set(['LANG', 'LANGUAGE', 'TZ']);
const PASSED_PREFIX = 'LC_';

/** Where Chromium finds programs: the system's own directories only. */
const SYSTEM_PATH = '/usr/local/bin:/usr/bin:/bin';

/**
 * Chromium's environment: the locale and time zone of `from`, a system PATH, and `home` as
 * HOME and TMPDIR (a directory Chromium's user may write: its fontconfig cache and NSS store go there).
 */
export function chromiumEnvironment(from: NodeJS.ProcessEnv, home: string): Record<string, string> {
  const env: Record<string, string> = { PATH: SYSTEM_PATH, HOME: home, TMPDIR: home };
  for (const [name, value] of Object.entries(from)) {
    if (value === undefined) continue;
    if (PASSED.has(name) || name.startsWith(PASSED_PREFIX)) env[name] = value;
  }
  return env;
}
