/**
 * A cluster's pod network on one machine, for the chart's wiring test: each pod is a network
 * namespace on one switch (a bridge in a namespace of its own), with an address on one /24 and
 * its peers' link addresses fixed (no ARP, which the rules below would otherwise have to admit).
 * The machine itself joins the switch as the node (the kubelet's probes, which NetworkPolicy does
 * not govern) and as a client outside the cluster.
 *
 * The NetworkPolicies are enforced per pod, in its namespace, by policy routing (`ip rule`, which
 * matches protocol and ports): a packet is routed only when a rule lets it, as a CNI lets a
 * connection only when a policy does. Egress: locally made packets to an allowed peer and port,
 * and the answers of this pod's own listeners to the peers allowed to reach them. Ingress:
 * packets from an allowed peer to the allowed port, and the answers to this pod's own allowed
 * connections. Anything else is refused on the way out (EACCES) or dropped on the way in. The
 * rules are stateless (as a network ACL), so a pod could pass a rule by choosing its source port;
 * the roles never do.
 *
 * Service names resolve through a hosts file per namespace (`/etc/netns/<ns>/hosts`, which
 * `ip netns exec` mounts over /etc/hosts), as the cluster's DNS resolves them: a name to each pod
 * in its Service's endpoints. A pod can join a running network (a rollout's new pod), and a name
 * can be pointed at other pods, as the endpoints change.
 */
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { addNamespace, addSwitch, ip, plugIntoSwitch } from '../../lib/netns.ts';

/** One TCP path that is open: `from` may connect to `to` on `port`. */
export interface Path {
  from: string;
  to: string;
  port: number;
}

export interface PodNet {
  /** The namespace of a pod. */
  ns(pod: string): string;
  /** A pod's address. */
  addr(pod: string): string;
  /** The node's address (the machine): probes come from it, and it reaches every pod. */
  nodeAddr: string;
  /** An address of the machine outside the cluster: a client of the public edge. */
  clientAddr: string;
  /** The pods on the network, those added included. */
  pods(): string[];
  /**
   * Adds a pod to the running network (a Deployment's new pod): a namespace and an address of its
   * own, the links to every peer, and of `paths` those it is an end of, in its rules and its
   * peers'. It resolves the names as every pod does.
   */
  addPod(pod: string, paths: Path[]): void;
  /** Points `name` at these pods' addresses, in order, in every pod's hosts file (the Service's endpoints changed). */
  resolve(name: string, pods: string[]): void;
  /** Removes every namespace, link and hosts file made. Idempotent. */
  destroy(): void;
}

/** The addresses a network of `pods` with this `id` gives: each pod's, the node's and the client's. */
export function podNetAddresses(id: number, pods: string[]): { addr(pod: string): string; nodeAddr: string; clientAddr: string } {
  const net = `10.204.${id}`;
  return {
    addr(p) {
      const i = pods.indexOf(p);
      if (i < 0) throw new Error(`no pod ${p}`);
      return `${net}.${10 + i}`;
    },
    nodeAddr: `${net}.1`,
    clientAddr: `${net}.254`,
  };
}

/** The size of every hosts file, whatever names it holds. */
const HOSTS_BYTES = 4096;

function mac(args: string[]): string {
  const [link] = JSON.parse(ip('-j', ...args)) as Array<{ address: string }>;
  return link!.address;
}

/**
 * Builds the network: `pods` by name (1–200 of them, with those added later), `hosts` the names
 * every pod resolves (name → the pods it resolves to, in order), `paths` the connections the
 * policies allow. `id` (1–250) keeps runs apart.
 */
export function createPodNet(id: number, pods: string[], hosts: Record<string, string[]>, paths: Path[]): PodNet {
  const tag = `tw${id}`;
  const ns = (p: string): string => `${tag}-${p}`;
  const all = [...pods];
  const names = new Map(Object.entries(hosts).map(([name, to]) => [name, [...to]]));
  const open: Path[] = [];
  const { nodeAddr, clientAddr } = podNetAddresses(id, all);
  const addr = (p: string): string => podNetAddresses(id, all).addr(p);
  const sw = ns('sw');
  const hostIf = `${tag}h`;
  const made: string[] = [];
  /** Each address on the switch and its link address: pods, the node and the client. */
  const macs = new Map<string, string>();
  const destroy = (): void => {
    for (const n of made.splice(0).reverse()) {
      try { ip('netns', 'del', n); } catch { /* already gone */ }
      rmSync(`/etc/netns/${n}`, { recursive: true, force: true });
    }
    try { ip('link', 'del', hostIf); } catch { /* went with the switch */ }
  };
  /** A pod's namespace, its link to the switch and its address. */
  const plug = (p: string): void => {
    made.push(ns(p));
    addNamespace(ns(p));
    const i = all.indexOf(p);
    plugIntoSwitch(ns(p), sw, `${tag}-${i}a`, `${tag}-${i}b`);
    // IPv4 only: the rules below are IPv4 rules, so no IPv6 link-local path may exist beside them.
    execFileSync('ip', ['netns', 'exec', ns(p), 'sh', '-c', 'echo 1 > /proc/sys/net/ipv6/conf/eth0/disable_ipv6'], { stdio: 'ignore' });
    ip('-n', ns(p), 'addr', 'add', `${addr(p)}/24`, 'dev', 'eth0');
    ip('-n', ns(p), 'link', 'set', 'eth0', 'up');
    macs.set(addr(p), mac(['-n', ns(p), 'link', 'show', 'eth0']));
  };
  /** Fixes the link address of `a` in the namespaces `into` (the machine's own when `into` holds ''). */
  const neighbour = (a: string, into: string[]): void => {
    for (const p of into) {
      if (p === '') ip('neigh', 'replace', a, 'lladdr', macs.get(a)!, 'dev', hostIf, 'nud', 'permanent');
      else if (a !== addr(p)) ip('-n', ns(p), 'neigh', 'replace', a, 'lladdr', macs.get(a)!, 'dev', 'eth0', 'nud', 'permanent');
    }
  };
  /** The rules of `path` in pod `p`'s namespace, where it is one of the path's ends. */
  const pathRules = (p: string, path: Path): string[][] => {
    const tcp = ['ipproto', 'tcp'];
    const rules: string[][] = [];
    if (path.from === p) {
      const peer = path.to === 'client' ? clientAddr : addr(path.to);
      rules.push(['pref', '20', 'iif', 'lo', 'to', peer, ...tcp, 'dport', String(path.port), 'lookup', 'main']);
      rules.push(['pref', '30', 'iif', 'eth0', 'from', peer, ...tcp, 'sport', String(path.port), 'lookup', 'local']);
    }
    if (path.to === p) {
      const peer = path.from === 'client' ? clientAddr : addr(path.from);
      rules.push(['pref', '30', 'iif', 'eth0', 'from', peer, ...tcp, 'dport', String(path.port), 'lookup', 'local']);
      rules.push(['pref', '20', 'iif', 'lo', 'to', peer, ...tcp, 'sport', String(path.port), 'lookup', 'main']);
    }
    return rules;
  };
  /** A pod's own rules: nothing routes but what they let, the catch-all rules go, a refusal ends the list. */
  const fence = (p: string): void => {
    const n = ns(p);
    const rules: string[][] = [
      ['pref', '10', 'iif', 'lo', 'lookup', 'local'],
      // The node (kubelet probes, the test's own look at a pod) is never subject to a policy.
      ['pref', '11', 'iif', 'lo', 'to', nodeAddr, 'lookup', 'main'],
      ['pref', '11', 'iif', 'eth0', 'from', nodeAddr, 'lookup', 'local'],
      ...open.flatMap((path) => pathRules(p, path)),
      ['pref', '1000', 'prohibit'],
    ];
    for (const r of rules) ip('-n', n, 'rule', 'add', ...r);
    ip('-n', n, 'rule', 'del', 'pref', '0');
    ip('-n', n, 'rule', 'del', 'pref', '32766');
  };
  /**
   * Every pod's hosts file. `ip netns exec` bind-mounts the file itself, so it is rewritten in
   * place, never replaced; and never truncated, so a lookup made while it changes never finds it
   * empty: one write of HOSTS_BYTES, the names padded out with a comment.
   */
  const writeHosts = (): void => {
    const lines = ['127.0.0.1 localhost', '::1 localhost', ...[...names].flatMap(([name, to]) => to.map((p) => `${addr(p)} ${name}`))].join('\n') + '\n#';
    if (lines.length > HOSTS_BYTES - 1) throw new Error('too many names for the hosts file');
    const text = Buffer.from(lines.padEnd(HOSTS_BYTES - 1, '#') + '\n');
    for (const p of all) {
      const file = `/etc/netns/${ns(p)}/hosts`;
      mkdirSync(dirname(file), { recursive: true });
      const fd = openSync(file, existsSync(file) ? 'r+' : 'w');
      try { writeSync(fd, text, 0, text.length, 0); } finally { closeSync(fd); }
    }
  };
  try {
    if (all.length > 200) throw new Error('at most 200 pods');
    made.push(sw);
    addSwitch(sw);
    try { ip('link', 'del', hostIf); } catch { /* none */ }
    for (const p of all) plug(p);
    // The machine's own port on the switch: the node, and a client outside the cluster.
    ip('link', 'add', hostIf, 'type', 'veth', 'peer', 'name', `${hostIf}b`);
    ip('link', 'set', `${hostIf}b`, 'netns', sw);
    ip('-n', sw, 'link', 'set', `${hostIf}b`, 'master', 'br0');
    ip('-n', sw, 'link', 'set', `${hostIf}b`, 'up');
    ip('addr', 'add', `${nodeAddr}/24`, 'dev', hostIf);
    ip('addr', 'add', `${clientAddr}/24`, 'dev', hostIf);
    ip('link', 'set', hostIf, 'up');
    const hostMac = mac(['link', 'show', hostIf]);
    macs.set(nodeAddr, hostMac);
    macs.set(clientAddr, hostMac);
    for (const a of macs.keys()) neighbour(a, a === nodeAddr || a === clientAddr ? all : ['', ...all]);
    open.push(...paths);
    for (const p of all) fence(p);
    writeHosts();
  } catch (err) {
    destroy();
    throw err;
  }
  return {
    ns,
    addr,
    nodeAddr,
    clientAddr,
    pods: () => [...all],
    addPod(p, more) {
      if (all.includes(p)) throw new Error(`pod ${p} exists`);
      if (all.length >= 200) throw new Error('at most 200 pods');
      all.push(p);
      plug(p);
      // Its peers learn its link address, it learns theirs, the node's and the client's.
      neighbour(addr(p), ['', ...all]);
      for (const a of macs.keys()) neighbour(a, [p]);
      const mine = more.filter((x) => x.from === p || x.to === p);
      open.push(...mine);
      fence(p);
      for (const path of mine) {
        for (const peer of [path.from, path.to]) {
          if (peer === p || peer === 'client') continue;
          for (const r of pathRules(peer, path)) ip('-n', ns(peer), 'rule', 'add', ...r);
        }
      }
      writeHosts();
    },
    resolve(name, to) {
      for (const p of to) addr(p);
      names.set(name, [...to]);
      writeHosts();
    },
    destroy,
  };
}
