/**
 * The network of the roles-apart deployment, built from network namespaces as the chart's
 * NetworkPolicy will draw it (docs/security.md "Chromium isolation", `pod`): a switch (a bridge in a
 * namespace of its own) joins the guard, policy, the cache, the edge and the renderer pods. Each
 * member has a /32 address and routes to exactly the members it may talk to, so a pod reaches the
 * guard, policy, the cache and (to answer it) the edge, and nothing else: not the other pod, not
 * the host, not the test site. The guard alone has a link to the host, where the test site
 * listens: its only way out. The edge has a link to the host too, where the test's client is.
 * No iptables: what is not routed cannot be reached.
 */
import { addNamespace, addSwitch, ip, plugIntoSwitch } from '../lib/netns.ts';

/** Who may reach whom, by member name. Replies need a route back, so links are two-way. */
const LINKS: Array<[string, string]> = [
  ['g', 'r1'], ['g', 'r2'],
  ['p', 'r1'], ['p', 'r2'], ['p', 'e'],
  ['c', 'r1'], ['c', 'r2'],
  ['e', 'r1'], ['e', 'r2'],
];
const HOST_BYTE: Record<string, number> = { g: 2, p: 3, e: 4, c: 5, r1: 11, r2: 12 };

export interface ApartNet {
  id: number;
  /** Namespace name of a member (`g`, `p`, `c`, `e`, `r1`, `r2`). */
  ns(member: string): string;
  /** A member's address on the switch. */
  addr(member: string): string;
  /** The host's address on the guard's link: where the test site listens. */
  siteAddr: string;
  /** The edge's address on its link to the host: where the test's client connects. */
  edgeAddr: string;
  /** Removes every namespace and link made. */
  destroy(): void;
}

/** A point-to-point link between the host and namespace `ns`: host side `.1`, namespace side `.2`. */
function hostLink(ns: string, hostIf: string, net: string): void {
  ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', `${hostIf}n`);
  ip('link', 'set', `${hostIf}n`, 'netns', ns);
  ip('-n', ns, 'link', 'set', `${hostIf}n`, 'name', 'up0');
  ip('addr', 'add', `${net}.1/30`, 'dev', hostIf);
  ip('link', 'set', hostIf, 'up');
  ip('-n', ns, 'addr', 'add', `${net}.2/30`, 'dev', 'up0');
  ip('-n', ns, 'link', 'set', 'up0', 'up');
}

/** Builds the network; `id` (1–250) keeps parallel runs apart. */
export function createApartNet(id: number): ApartNet {
  const tag = `tt${id}`;
  const ns = (m: string): string => `${tag}-${m}`;
  const sw = ns('sw');
  const addr = (m: string): string => `10.200.${id}.${HOST_BYTE[m]}`;
  const made: string[] = [];
  const hostIfs: string[] = [];
  const destroy = (): void => {
    for (const n of made.splice(0).reverse()) {
      try { ip('netns', 'del', n); } catch { /* already gone */ }
    }
    for (const i of hostIfs.splice(0)) {
      try { ip('link', 'del', i); } catch { /* went with its namespace */ }
    }
  };
  try {
    made.push(sw);
    addSwitch(sw);
    for (const m of Object.keys(HOST_BYTE)) {
      made.push(ns(m));
      addNamespace(ns(m));
      plugIntoSwitch(ns(m), sw, `${tag}${m}a`, `${tag}${m}b`);
      ip('-n', ns(m), 'addr', 'add', `${addr(m)}/32`, 'dev', 'eth0');
      ip('-n', ns(m), 'link', 'set', 'eth0', 'up');
    }
    for (const [x, y] of LINKS) {
      ip('-n', ns(x), 'route', 'add', `${addr(y)}/32`, 'dev', 'eth0');
      ip('-n', ns(y), 'route', 'add', `${addr(x)}/32`, 'dev', 'eth0');
    }
    // The guard's way out: to the host's side of its own link, where the test site is.
    hostLink(ns('g'), `${tag}gh`, `10.201.${id}`);
    hostIfs.push(`${tag}gh`);
    ip('-n', ns('g'), 'route', 'add', 'default', 'via', `10.201.${id}.1`);
    // The client's way in: the host reaches the edge on a link of its own.
    hostLink(ns('e'), `${tag}eh`, `10.202.${id}`);
    hostIfs.push(`${tag}eh`);
  } catch (err) {
    destroy();
    throw err;
  }
  return { id, ns, addr, siteAddr: `10.201.${id}.1`, edgeAddr: `10.202.${id}.2`, destroy };
}
