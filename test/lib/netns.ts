/**
 * Network namespaces for the tests that put roles or pods on hosts of their own
 * (test/e2e/apart-net.ts, test/chart/wiring/pod-net.ts), with iproute2's `ip`, as root: each host
 * a namespace plugged into a switch (a namespace holding a bridge) through a veth pair.
 */
import { execFileSync } from 'node:child_process';

/** Runs `ip` and returns what it printed; a failure throws with its error output. */
export const ip = (...args: string[]): string => execFileSync('ip', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

/** Adds namespace `n` with its loopback up, first removing one of that name a killed run left. */
export function addNamespace(n: string): void {
  try { ip('netns', 'del', n); } catch { /* none left over */ }
  ip('netns', 'add', n);
  ip('-n', n, 'link', 'set', 'lo', 'up');
}

/** Adds the switch: namespace `sw` holding bridge `br0`. */
export function addSwitch(sw: string): void {
  addNamespace(sw);
  ip('-n', sw, 'link', 'add', 'br0', 'type', 'bridge');
  ip('-n', sw, 'link', 'set', 'br0', 'up');
}

/**
 * Plugs namespace `host` into switch `sw` with a veth pair: `a` becomes the host's `eth0` (left
 * down, for the caller to address), `b` is the switch's port. Names must fit 15 bytes.
 */
export function plugIntoSwitch(host: string, sw: string, a: string, b: string): void {
  ip('link', 'add', a, 'type', 'veth', 'peer', 'name', b);
  ip('link', 'set', a, 'netns', host);
  ip('-n', host, 'link', 'set', a, 'name', 'eth0');
  ip('link', 'set', b, 'netns', sw);
  ip('-n', sw, 'link', 'set', b, 'master', 'br0');
  ip('-n', sw, 'link', 'set', b, 'up');
}
