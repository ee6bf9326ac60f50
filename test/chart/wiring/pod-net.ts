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
 * `ip netns exec` mounts over /etc/hosts), as the cluster's DNS resolves them.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';

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

const ip = (...args: string[]): string => execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

function mac(args: string[]): string {
  const [link] = JSON.parse(ip('-j', ...args)) as Array<{ address: string }>;
  return link!.address;
}

/**
 * Builds the network: `pods` by name (1–200 of them), `hosts` the names every pod resolves
 * (name → pod), `paths` the connections the policies allow. `id` (1–250) keeps runs apart.
 */
export function createPodNet(id: number, pods: string[], hosts: Record<string, string>, paths: Path[]): PodNet {
  if (pods.length > 200) throw new Error('at most 200 pods');
  const tag = `tw${id}`;
  const ns = (p: string): string => `${tag}-${p}`;
  const index = new Map(pods.map((p, i) => [p, i]));
  const { addr, nodeAddr, clientAddr } = podNetAddresses(id, pods);
  const sw = ns('sw');
  const hostIf = `${tag}h`;
  const made: string[] = [];
  const destroy = (): void => {
    for (const n of made.splice(0).reverse()) {
      try { ip('netns', 'del', n); } catch { /* already gone */ }
      rmSync(`/etc/netns/${n}`, { recursive: true, force: true });
    }
    try { ip('link', 'del', hostIf); } catch { /* went with the switch */ }
  };
  try {
    for (const n of [sw, ...pods.map(ns)]) {
      // Left over from a run that was killed before it could clean up.
      try { ip('netns', 'del', n); } catch { /* none */ }
      ip('netns', 'add', n);
      made.push(n);
      ip('-n', n, 'link', 'set', 'lo', 'up');
    }
    try { ip('link', 'del', hostIf); } catch { /* none */ }
    ip('-n', sw, 'link', 'add', 'br0', 'type', 'bridge');
    ip('-n', sw, 'link', 'set', 'br0', 'up');
    const macs = new Map<string, string>();
    for (const p of pods) {
      const a = `${tag}-${index.get(p)}a`;
      const b = `${tag}-${index.get(p)}b`;
      ip('link', 'add', a, 'type', 'veth', 'peer', 'name', b);
      ip('link', 'set', a, 'netns', ns(p));
      ip('-n', ns(p), 'link', 'set', a, 'name', 'eth0');
      ip('link', 'set', b, 'netns', sw);
      ip('-n', sw, 'link', 'set', b, 'master', 'br0');
      ip('-n', sw, 'link', 'set', b, 'up');
      // IPv4 only: the rules below are IPv4 rules, so no IPv6 link-local path may exist beside them.
      execFileSync('ip', ['netns', 'exec', ns(p), 'sh', '-c', 'echo 1 > /proc/sys/net/ipv6/conf/eth0/disable_ipv6'], { stdio: 'ignore' });
      ip('-n', ns(p), 'addr', 'add', `${addr(p)}/24`, 'dev', 'eth0');
      ip('-n', ns(p), 'link', 'set', 'eth0', 'up');
      macs.set(addr(p), mac(['-n', ns(p), 'link', 'show', 'eth0']));
    }
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
    for (const [a, m] of macs) {
      if (a === nodeAddr || a === clientAddr) continue;
      ip('neigh', 'replace', a, 'lladdr', m, 'dev', hostIf, 'nud', 'permanent');
    }
    const hostsText = ['127.0.0.1 localhost', '::1 localhost', ...Object.entries(hosts).map(([name, pod]) => `${addr(pod)} ${name}`)].join('\n') + '\n';
    for (const p of pods) {
      const n = ns(p);
      for (const [a, m] of macs) if (a !== addr(p)) ip('-n', n, 'neigh', 'replace', a, 'lladdr', m, 'dev', 'eth0', 'nud', 'permanent');
      mkdirSync(`/etc/netns/${n}`, { recursive: true });
      writeFileSync(`/etc/netns/${n}/hosts`, hostsText);
      // Nothing but the rules below routes: the catch-all rules go, a refusal ends the list.
      const rules: string[][] = [
        ['pref', '10', 'iif', 'lo', 'lookup', 'local'],
        // The node (kubelet probes, the test's own look at a pod) is never subject to a policy.
        ['pref', '11', 'iif', 'lo', 'to', nodeAddr, 'lookup', 'main'],
        ['pref', '11', 'iif', 'eth0', 'from', nodeAddr, 'lookup', 'local'],
      ];
      for (const path of paths) {
        const tcp = ['ipproto', 'tcp'];
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
      }
      rules.push(['pref', '1000', 'prohibit']);
      for (const r of rules) ip('-n', n, 'rule', 'add', ...r);
      ip('-n', n, 'rule', 'del', 'pref', '0');
      ip('-n', n, 'rule', 'del', 'pref', '32766');
    }
  } catch (err) {
    destroy();
    throw err;
  }
  return { ns, addr, nodeAddr, clientAddr, destroy };
}
