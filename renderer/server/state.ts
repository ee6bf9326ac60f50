/** What a request's middlewares share through ctx.state. */
import type { RejectReason } from '../../lib/errors.ts';
import type { LeaseClaims } from '../../lib/lease.ts';
import type { CacheOutcome, Operation } from '../../lib/policy-contract.ts';

export interface RendererState {
  /** The operation of a /v1 path, when it names one. */
  operation?: Operation;
  /** Aborted when the client goes away before its answer is written. */
  signal: AbortSignal;
  /** Epoch ms the request arrived. */
  startedAt: number;
  /** The `error` code of the answer, when it was an error with one. */
  errorCode?: string;
  rejectReason?: RejectReason;
  /** Whether anything was rendered, for 200 answers of render operations. */
  cache?: CacheOutcome;
  blocked?: number;
  /** The request's lease once checked and claimed: its token and what it says (the key's egress policy among it). */
  lease?: { token: string; claims: LeaseClaims };
  /** The OG query string, which the access line carries (spec 4.5 rule 7). */
  ogQuery?: string;
}
