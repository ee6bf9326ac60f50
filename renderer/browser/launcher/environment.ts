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

/** Where Chromium writes, and which fontconfig file it reads. */
export interface ChromiumPlaces {
  /** HOME: a directory Chromium's user may write (its NSS store goes there). */
  home: string;
  /** TMPDIR; `home` when absent. */
  tmp?: string;
  /** FONTCONFIG_FILE (fontconfig.ts); fontconfig's own default when absent. */
  fontconfig?: string;
}

/** Chromium's environment: the locale and time zone of `from`, a system PATH, and `places`. */
export function chromiumEnvironment(from: NodeJS.ProcessEnv, places: ChromiumPlaces): Record<string, string> {
  const env: Record<string, string> = { PATH: SYSTEM_PATH, HOME: places.home, TMPDIR: places.tmp ?? places.home };
  if (places.fontconfig !== undefined) env['FONTCONFIG_FILE'] = places.fontconfig;
  for (const [name, value] of Object.entries(from)) {
    if (value === undefined) continue;
    if (PASSED.has(name) || name.startsWith(PASSED_PREFIX)) env[name] = value;
  }
  return env;
}
