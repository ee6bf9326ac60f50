/**
 * The fontconfig configuration Chromium is given (FONTCONFIG_FILE; docs/security.md "The browser
 * container"): the system's own, without a single user location. The system's fonts.conf and its
 * conf.d read `~/.fonts.conf`, `$XDG_CONFIG_HOME/fontconfig/fonts.conf`, `~/.fonts` and user
 * caches: a file a compromised browser planted there would change the text of renders it never
 * saw. This one keeps the system's directories, rules and caches, includes each system conf.d file
 * that names no user location by its own path, and drops every element that names one.
 */
import { readdirSync, readFileSync } from 'node:fs';
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

/** True when a configuration file's text names a user location anywhere. */
export function namesUserPlace(text: string): boolean {
  for (const m of text.matchAll(PLACE)) if (userPlace(m[1]!, m[2]!, m[3]!)) return true;
  return false;
}

/** The system conf.d files fontconfig would read (`[0-9]*.conf`, in order) that name no user location. */
function systemConfD(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => /^[0-9].*\.conf$/.test(n))
    .sort()
    .map((n) => path.join(dir, n))
    .filter(isSystemFile);
}

/**
 * The configuration: the system's fonts.conf with every user location dropped and its `conf.d`
 * include replaced by the system files it would read that name none. Without a system fonts.conf:
 * the system font directories and cache alone.
 */
export function systemOnlyFontsConfig(systemDir = SYSTEM_FONTS_DIR): string {
  let base: string;
  try {
    base = readFileSync(path.join(systemDir, 'fonts.conf'), 'utf8');
  } catch {
    base = '<?xml version="1.0"?>\n<fontconfig>\n<dir>/usr/share/fonts</dir>\n<cachedir>/var/cache/fontconfig</cachedir>\n</fontconfig>\n';
  }
  return base.replace(PLACE, (whole, kind: string, attributes: string, place: string) => {
    const p = place.trim();
    if (kind === 'include' && (p === 'conf.d' || p === path.join(systemDir, 'conf.d'))) {
      return systemConfD(path.join(systemDir, 'conf.d'))
        .map((f) => `<include ignore_missing="yes">${f}</include>`)
        .join('\n\t');
    }
    if (userPlace(kind, attributes, place)) return '';
    if (kind !== 'include') return whole;
    // Named by its full path, and read only when it names no user location itself.
    const full = path.resolve(systemDir, p);
    return isSystemFile(full) ? `<include ignore_missing="yes">${full}</include>` : '';
  });
}

/** True for a readable file that names no user location. */
function isSystemFile(p: string): boolean {
  try {
    return !namesUserPlace(readFileSync(p, 'utf8'));
  } catch {
    return false;
  }
}
