/**
 * The fontconfig configuration Chromium is given (FONTCONFIG_FILE; docs/security.md "The browser
 * container"): the system's own, without a single user location. The system's fonts.conf and its
 * conf.d read `~/.fonts.conf`, `$XDG_CONFIG_HOME/fontconfig/fonts.conf`, `~/.fonts` and user
 * caches: a file a compromised browser planted there would change the text of renders it never
 * saw. This one keeps the system's directories, rules and caches, includes each system conf.d file
 * that names no user location by its own path, and drops every element that names one.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

/** Where the system's configuration is. */
export const SYSTEM_FONTS_DIR = '/etc/fonts';

/** `<dir>`, `<cachedir>` and `<include>` elements: the ones that name a place to read. */
const PLACE = /<(dir|cachedir|include)\b([^>]*)>([^<]*)<\/\1>/g;

/**
 * True when an element names a user location: an XDG or home prefix, a path from `~`, or a
 * directory relative to where Chromium runs (an include relative to /etc/fonts is the system's).
 */
function userPlace(kind: string, attributes: string, place: string): boolean {
  const p = place.trim();
  if (/\bprefix\s*=\s*["'](xdg|default|cwd|relative)["']/.test(attributes) || p.startsWith('~')) return true;
  return kind !== 'include' && !p.startsWith('/');
}

/** How deep includes are followed; a system's configuration nests two or three. */
const MAX_DEPTH = 8;

/** The files fontconfig reads for an include of `p`: the file, or a directory's `[0-9]*.conf` in order. */
function filesOf(p: string): string[] {
  try {
    if (!statSync(p).isDirectory()) return [p];
    return readdirSync(p)
      .filter((n) => /^[0-9].*\.conf$/.test(n))
      .sort()
      .map((n) => path.join(p, n));
  } catch {
    return []; // missing: fontconfig skips it too (ignore_missing)
  }
}

/**
 * True when the configuration file `p` names no user location, nor does any file it includes
 * (followed to MAX_DEPTH; deeper counts as naming one, as does a file that cannot be read).
 */
function readsOnlySystem(p: string, systemDir: string, depth = 0): boolean {
  if (depth > MAX_DEPTH) return false;
  let text: string;
  try {
    text = readFileSync(p, 'utf8');
  } catch {
    return false;
  }
  for (const [, kind, attributes, place] of text.matchAll(PLACE) as Iterable<[string, string, string, string]>) {
    if (userPlace(kind, attributes, place)) return false;
    if (kind !== 'include') continue;
    if (!filesOf(path.resolve(systemDir, place.trim())).every((f) => readsOnlySystem(f, systemDir, depth + 1))) return false;
  }
  return true;
}

/**
 * The configuration: the system's fonts.conf with every element naming a user location dropped,
 * and each include replaced by the files it would read, by full path, that name none (followed
 * through their own includes). Without a system fonts.conf: the system font directories and cache.
 */
export function systemOnlyFontsConfig(systemDir = SYSTEM_FONTS_DIR): string {
  let base: string;
  try {
    base = readFileSync(path.join(systemDir, 'fonts.conf'), 'utf8');
  } catch {
    base = '<?xml version="1.0"?>\n<fontconfig>\n<dir>/usr/share/fonts</dir>\n<cachedir>/var/cache/fontconfig</cachedir>\n</fontconfig>\n';
  }
  return base.replace(PLACE, (whole, kind: string, attributes: string, place: string) => {
    if (userPlace(kind, attributes, place)) return '';
    if (kind !== 'include') return whole;
    return filesOf(path.resolve(systemDir, place.trim()))
      .filter((f) => readsOnlySystem(f, systemDir))
      .map((f) => `<include ignore_missing="yes">${f}</include>`)
      .join('\n\t');
  });
}
