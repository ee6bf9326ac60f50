/**
 * Names refused without a lookup (spec Part 1 rule 6; docs/architecture.md §7 rule 2): `localhost` and
 * names under `.localhost`, `.local`, `.internal` and `.home.arpa`. The host reaching here has
 * been through WHATWG host parsing, so it is already lower case and IDNA-mapped (fullwidth
 * letters and ideographic dots become ASCII); a trailing dot is ignored.
 */
const REFUSED_SUFFIXES = ['.localhost', '.local', '.internal', '.home.arpa'];

/** Drops one trailing dot: `example.com.` and `example.com` are the same name. */
export function withoutTrailingDot(name: string): string {
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** True for a name that is internal by definition. `name` is a WHATWG-parsed host. */
export function isRefusedName(name: string): boolean {
  const n = withoutTrailingDot(name.toLowerCase());
  if (n === 'localhost') return true;
  return REFUSED_SUFFIXES.some((s) => n.endsWith(s));
}

/**
 * True for a name the guard can put to a resolver: dot-separated labels of letters, digits
 * and hyphens (punycode included), 253 characters at most, no empty label but an optional
 * trailing dot. Underscores are allowed as some real hosts carry them.
 */
export function isResolvableName(name: string): boolean {
  const n = withoutTrailingDot(name);
  if (n.length === 0 || n.length > 253) return false;
  return n.split('.').every((label) => /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/i.test(label));
}
