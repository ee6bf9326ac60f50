/**
 * Kubernetes NetworkPolicy semantics, enough to ask "may this endpoint reach that one on this
 * port": a pod selected by a policy of a direction is isolated in it, and then a connection is
 * allowed when any rule of any policy selecting it matches both the peer and the port.
 */
import ipaddr from 'ipaddr.js';
import type { K8sObject } from '../helm.ts';
import type { Path } from './wiring/pod-net.ts';

/* eslint-disable @typescript-eslint/no-explicit-any */
export interface Endpoint {
  /** Pod labels; undefined for an address outside the cluster. */
  labels?: Record<string, string>;
  /** Labels of the pod's namespace. */
  namespace?: Record<string, string>;
  ip: string;
}

function labelsMatch(selector: any, labels: Record<string, string> | undefined): boolean {
  if (labels === undefined) return false;
  for (const [k, v] of Object.entries(selector?.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector?.matchExpressions ?? []) {
    const has = e.key in labels;
    if (e.operator === 'In' && !(has && e.values.includes(labels[e.key]))) return false;
    if (e.operator === 'NotIn' && has && e.values.includes(labels[e.key])) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

export function inCidr(ip: string, cidr: string): boolean {
  const addr = ipaddr.parse(ip);
  const [net, bits] = ipaddr.parseCIDR(cidr);
  return addr.kind() === net.kind() && addr.match(net, bits);
}

function peerMatches(peer: any, other: Endpoint, policyNamespace: Record<string, string>): boolean {
  if (peer.ipBlock !== undefined) {
    return inCidr(other.ip, peer.ipBlock.cidr) && !(peer.ipBlock.except ?? []).some((c: string) => inCidr(other.ip, c));
  }
  if (other.labels === undefined) return false;
  const nsOk = peer.namespaceSelector === undefined ? sameLabels(other.namespace, policyNamespace) : labelsMatch(peer.namespaceSelector, other.namespace);
  const podOk = peer.podSelector === undefined ? true : labelsMatch(peer.podSelector, other.labels);
  return nsOk && podOk;
}

function sameLabels(a: Record<string, string> | undefined, b: Record<string, string>): boolean {
  return a !== undefined && a['kubernetes.io/metadata.name'] === b['kubernetes.io/metadata.name'];
}

function portMatches(rule: any, port: number, protocol: string): boolean {
  if (rule.ports === undefined || rule.ports.length === 0) return true;
  return rule.ports.some((p: any) => (p.protocol ?? 'TCP') === protocol && (p.port === undefined || p.port === port || (p.endPort !== undefined && port >= p.port && port <= p.endPort)));
}

/** Whether `from` may open a connection to `to` on port/protocol, under the policies (in `namespace`). */
export function allowed(policies: K8sObject[], namespace: Record<string, string>, from: Endpoint, to: Endpoint, port: number, protocol = 'TCP'): boolean {
  const side = (pod: Endpoint, direction: 'Ingress' | 'Egress', other: Endpoint): boolean => {
    if (pod.labels === undefined || !sameLabels(pod.namespace, namespace)) return true; // not governed by these policies
    const selecting = policies.filter((p: any) => labelsMatch(p.spec.podSelector, pod.labels) && (p.spec.policyTypes ?? ['Ingress']).includes(direction));
    if (selecting.length === 0) return true;
    return selecting.some((p: any) =>
      (p.spec[direction === 'Ingress' ? 'ingress' : 'egress'] ?? []).some((rule: any) => {
        const peers = rule[direction === 'Ingress' ? 'from' : 'to'];
        const peerOk = peers === undefined || peers.length === 0 || peers.some((peer: any) => peerMatches(peer, other, namespace));
        return peerOk && portMatches(rule, port, protocol);
      }));
  };
  return side(from, 'Egress', to) && side(to, 'Ingress', from);
}

/**
 * The TCP paths the policies open between endpoints by name, on each port the one reached listens
 * on (`ports`); with `only`, the paths it is an end of.
 */
export function openPaths(policies: K8sObject[], namespace: Record<string, string>, endpoints: Record<string, Endpoint>, ports: Record<string, number[]>, only?: string): Path[] {
  const paths: Path[] = [];
  for (const from of Object.keys(endpoints)) {
    for (const to of Object.keys(ports)) {
      if (from === to || (only !== undefined && from !== only && to !== only)) continue;
      for (const port of ports[to]!) if (allowed(policies, namespace, endpoints[from]!, endpoints[to]!, port)) paths.push({ from, to, port });
    }
  }
  return paths;
}
