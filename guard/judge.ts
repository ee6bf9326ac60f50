/**
 * The one code path that decides whether a target may be reached (docs/architecture.md §7 rules 1–6), used
 * by the proxy for every request and tunnel and by the renderer for the page address before
 * it takes a render slot (spec 4.4 rule 3). Parse ▸ refuse by name ▸ resolve once ▸ judge
 * every answer ▸ keep the addresses that passed, which are the only ones ever dialled.
 */
import { REJECT_REASONS, type RejectReason } from '../lib/errors.ts';
import {
  dialTarget,
  judgeAddress,
  parseAddress,
  parseCidr,
  type Address,
  type AddressRules,
  type AddressVerdict,
} from './address.ts';
import { DnsFailure, type Resolve } from './resolver.ts';
import { selfName, type SelfSet } from './self.ts';
import { isRefused, parseUrlTarget, type Refused, type Target } from './target.ts';

/** An address that passed, in the form it is dialled. */
export interface DialAddress {
  address: string;
  family: 4 | 6;
}

/** The outcome for one target. */
export type Judgement =
  | { ok: true; target: Target; addresses: DialAddress[] }
  | { ok: false; reason: RejectReason; dnsCode?: string };

/** The first of several reasons in the order of docs/architecture.md §7 rule 6. */
export function firstReason(reasons: Iterable<RejectReason>): RejectReason | undefined {
  let best: number | undefined;
  for (const r of reasons) {
    const i = REJECT_REASONS.indexOf(r);
    if (best === undefined || i < best) best = i;
  }
  return best === undefined ? undefined : REJECT_REASONS[best];
}

/** The verdict on a whole answer set for one port: one bad answer refuses the target (rule 4). */
export function judgeAnswers(addresses: readonly Address[], rules: AddressRules, port?: number): AddressVerdict {
  let verdict: AddressVerdict = 'ok';
  for (const a of addresses) {
    const v = judgeAddress(a, rules, port);
    if (v === 'private_address') return v;
    if (v === 'denied_host') verdict = v;
  }
  return verdict;
}

/** The settings and seams a judge needs. */
export interface JudgeRules {
  resolve: Resolve;
  /** GUARD_ALLOW_CIDRS: ranges opened on purpose. */
  allowCidrs: readonly string[];
  self: SelfSet;
  /** The ports the service listens on (asked when a target is on this host's addresses). */
  ownPorts?: () => Iterable<number>;
}

/** Decides targets; built once per guard (or renderer) with its rules. */
export class Judge {
  private readonly rules: AddressRules;
  private readonly selfNames: ReadonlySet<string>;
  private readonly resolve: Resolve;

  constructor(rules: JudgeRules) {
    this.rules = {
      allow: rules.allowCidrs.map(parseCidr),
      self: rules.self.addresses,
      selfRanges: rules.self.ranges,
      ...(rules.ownPorts === undefined ? {} : { ownPorts: rules.ownPorts }),
    };
    this.selfNames = rules.self.names;
    this.resolve = rules.resolve;
  }

  /** Judges a target that passed the checks needing no lookup (or passes a refusal through). */
  async judge(parsed: Target | Refused): Promise<Judgement> {
    if (isRefused(parsed)) return { ok: false, reason: parsed.reason };
    const host = parsed.host;
    let answers: Address[];
    if (host.kind === 'address') {
      answers = [host.address];
    } else {
      let texts: string[];
      try {
        texts = await this.resolve(host.name);
      } catch (err) {
        return { ok: false, reason: 'dns_failure', dnsCode: err instanceof DnsFailure ? err.code : 'EUNKNOWN' };
      }
      answers = [];
      for (const t of texts) {
        const a = parseAddress(t);
        // An answer that is not an address cannot be judged, so nothing of this lookup is trusted.
        if (a === undefined) return { ok: false, reason: 'dns_failure', dnsCode: 'EBADANSWER' };
        answers.push(a);
      }
      if (answers.length === 0) return { ok: false, reason: 'dns_failure', dnsCode: 'ENODATA' };
    }
    const verdict = judgeAnswers(answers, this.rules, parsed.port);
    if (verdict !== 'ok') return { ok: false, reason: verdict };
    if (host.kind === 'name' && this.selfNames.has(selfName(host.name))) return { ok: false, reason: 'denied_host' };
    return { ok: true, target: parsed, addresses: answers.map(dialTarget) };
  }

  /** Judges an absolute page address (http or https). */
  url(text: string): Promise<Judgement> {
    return this.judge(parseUrlTarget(text));
  }
}

/**
 * The renderer's check of a page address before it takes a render slot (spec 4.4 rule 3):
 * the same parser, resolver and rules as the proxy, through the same Judge.
 */
export async function judgeUrl(
  url: string,
  judge: Judge,
): Promise<{ ok: true; addresses: string[] } | { ok: false; reason: RejectReason }> {
  const j = await judge.url(url);
  return j.ok ? { ok: true, addresses: j.addresses.map((a) => a.address) } : { ok: false, reason: j.reason };
}
