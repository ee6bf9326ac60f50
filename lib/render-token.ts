/**
 * Render tokens a renderer made (docs/security.md "The guard", "Tokens"): a token is 18 random
 * bytes and the first 18 bytes of their HMAC-SHA256 under a key that the guard and the renderer
 * hold and the browser container does not (`GUARD_TOKEN_KEY`; in `tintype start` and for a
 * renderer's own guard, a key made at start). The guard names a render only by a token it can
 * check, so nothing that lacks the key can make a name the guard keeps a record under: a made-up
 * token counts as naming no render.
 */
import { createHmac, createSecretKey, randomBytes, timingSafeEqual, type KeyObject } from 'node:crypto';

const RANDOM_BYTES = 18;
const MAC_BYTES = 18;
/** The least key length taken from the settings (an HMAC-SHA256 key of 256 bits). */
export const TOKEN_KEY_MIN_BYTES = 32;

export class RenderTokens {
  private constructor(private readonly key: KeyObject) {}

  /** A key made now: for a guard and a renderer in the same process. */
  static generate(): RenderTokens {
    return new RenderTokens(createSecretKey(randomBytes(TOKEN_KEY_MIN_BYTES)));
  }

  /**
   * The key `GUARD_TOKEN_KEY` holds: base64 (or base64url) of at least 32 bytes, not all alike.
   * Undefined when the text is no such key.
   */
  static fromKeyText(text: string): RenderTokens | undefined {
    const trimmed = text.trim();
    if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(trimmed)) return undefined;
    const bytes = Buffer.from(trimmed, 'base64');
    if (bytes.length < TOKEN_KEY_MIN_BYTES || new Set(bytes).size < 16) return undefined;
    return new RenderTokens(createSecretKey(bytes));
  }

  /** A new unguessable render token, in the form of lib/guard-contract.ts RENDER_TOKEN_FORM. */
  mint(): string {
    const random = randomBytes(RANDOM_BYTES);
    return Buffer.concat([random, this.mac(random)]).toString('base64url');
  }

  /** Whether `token` is one a holder of this key made. */
  made(token: string): boolean {
    const bytes = Buffer.from(token, 'base64url');
    if (bytes.length !== RANDOM_BYTES + MAC_BYTES || bytes.toString('base64url') !== token) return false;
    return timingSafeEqual(bytes.subarray(RANDOM_BYTES), this.mac(bytes.subarray(0, RANDOM_BYTES)));
  }

  private mac(random: Buffer): Buffer {
    return createHmac('sha256', this.key).update(random).digest().subarray(0, MAC_BYTES);
  }
}
