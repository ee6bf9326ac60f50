/**
 * Processes run as a pod's container runs, for the chart's wiring tests: in the pod's network
 * namespace (wiring/pod-net.ts), with the checkout bound where the image has its application and
 * a private /tmp (the pod's emptyDir), exactly the environment given; the backends' stand-in
 * pods relay to this machine's services; connections tried from a pod say what its rules allow.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import type { PodPlan } from './pods.ts';
import { watchOutput } from '../../lib/watched-output.ts';

export interface Proc {
  name: string;
  child: ChildProcess;
  output(): string;
  waitFor(re: RegExp): Promise<void>;
  exited: Promise<number | null>;
}

/** A TCP relay from `host:port` in a namespace to a unix socket of the machine (no tsx: quick to start). */
export const RELAY_JS = "const net=require('net');const [h,p,s]=process.argv.slice(1);net.createServer(c=>{const u=net.connect(s);c.pipe(u).pipe(c);const e=()=>{c.destroy();u.destroy()};for(const x of [c,u]){x.on('error',e);x.on('close',e)}}).listen(+p,h,()=>console.log('relay.ready'))";

/** Debian's tini, the init the image's ENTRYPOINT starts `tintype` under. */
export const TINI = '/usr/bin/tini';

/**
 * What a tintype pod runs here. Its argv must start with tini (the image's ENTRYPOINT); where this
 * machine has no tini (it is not in scripts/apt-packages.txt), what tini would start (after its
 * `--`) runs in its place, and only once the argv was seen to start with it. tini's reaping and
 * signal forwarding are not what these tests check: the wiring is.
 */
export function tintypeArgv(plan: PodPlan): string[] {
  const end = plan.argv.indexOf('--');
  if (plan.argv[0] !== TINI || end < 0) throw new Error(`${plan.deployment} does not run under ${TINI}: ${plan.argv.join(' ')}`);
  return existsSync(TINI) ? plan.argv : plan.argv.slice(end + 1);
}

/** Whether TCP connections from a pod reach `host:port`: `connected`, or the error (EACCES: refused by the pod's own rules; timeout: dropped by the peer's). */
export async function connectFrom(ns: string, targets: Array<[string, number]>): Promise<Record<string, string>> {
  const code = "const net=require('net');const ts=JSON.parse(process.argv[1]);const out={};let n=ts.length;" +
    "for(const [h,p] of ts){const s=net.connect({host:h,port:p,timeout:1500});const done=(r)=>{if(out[h+':'+p])return;out[h+':'+p]=r;s.destroy();if(--n===0)console.log(JSON.stringify(out))};" +
    "s.on('connect',()=>done('connected'));s.on('error',e=>done(e.code));s.on('timeout',()=>done('timeout'))}";
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile('ip', ['netns', 'exec', ns, 'node', '-e', code, JSON.stringify(targets)], { encoding: 'utf8' }, (err, out) => err === null ? resolve(out) : reject(err));
  });
  const got = JSON.parse(stdout) as Record<string, string>;
  // In the order asked, whatever order they finished in.
  return Object.fromEntries(targets.map(([h, p]) => [`${h}:${p}`, got[`${h}:${p}`]!]));
}

export interface PodProcesses {
  /** Every process started, in order. */
  procs: Proc[];
  /**
   * Runs argv in a pod: its namespace, the checkout at `app` (its working directory), its own
   * /tmp (`tmp`, the pod's emptyDir), exactly `env`.
   */
  run(name: string, ns: string, tmp: string, env: Record<string, string>, argv: string[]): Proc;
  /** The Proc of a started child: its output, its exit, waiting for a line; stopped by stopAll. */
  track(name: string, child: ChildProcess): Proc;
  /** A relay on the machine from a unix socket to a local service: what the backend stand-in pods forward to. */
  relay(sock: string, host: string, port: number): Promise<void>;
  /** SIGTERM to every process group, 15 s, then SIGKILL; the relays closed. */
  stopAll(): Promise<void>;
}

/** Processes of pods that see the checkout `root` at `app`. */
export function podProcesses(root: string, app: string): PodProcesses {
  const procs: Proc[] = [];
  const relays: net.Server[] = [];
  const track = (name: string, child: ChildProcess): Proc => {
    const proc: Proc = { name, child, ...watchOutput(child, name) };
    procs.push(proc);
    return proc;
  };
  return {
    procs,
    track,
    run(name, ns, tmp, env, argv) {
      const pod = 'app=$1 tmp=$2; shift 2; mount --rbind "$0" "$app" && mount --bind "$tmp" /tmp && cd "$app" && exec env -i "$@"';
      const child = spawn('ip', ['netns', 'exec', ns, 'sh', '-c', pod, root, app, tmp,
        ...Object.entries(env).map(([k, v]) => `${k}=${v}`), ...argv], { cwd: '/', detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
      return track(name, child);
    },
    async relay(sock, host, port) {
      const s = net.createServer((c) => {
        const u = net.connect(port, host);
        c.pipe(u).pipe(c);
        const end = (): void => { c.destroy(); u.destroy(); };
        for (const x of [c, u]) { x.once('error', end); x.once('close', end); }
      });
      await new Promise<void>((r) => s.listen(sock, r));
      relays.push(s);
    },
    async stopAll() {
      for (const p of procs) {
        if (p.child.exitCode === null && p.child.signalCode === null) {
          try { process.kill(-p.child.pid!, 'SIGTERM'); } catch { /* gone */ }
        }
      }
      await Promise.all(procs.map((p) => Promise.race([p.exited, new Promise((r) => setTimeout(r, 15_000))])));
      for (const p of procs) {
        try { process.kill(-p.child.pid!, 'SIGKILL'); } catch { /* gone */ }
      }
      for (const s of relays) s.close();
    },
  };
}
