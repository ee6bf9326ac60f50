/**
 * The file render cache under TINTYPE_DATA_DIR (spec Part 8: 24-hour lifetime; docs/operations.md "Settings").
 * Each entry is one file named by a hash of its key, written to a temporary name and renamed,
 * so a reader never sees half an entry. The total size is bounded (TINTYPE_CACHE_MAX_BYTES):
 * past it, the oldest entries go first. Expiry is read against an injected clock. The most
 * recently used entries are also held in memory (hot.ts), so a repeated hit reads no file.
 */
import { randomBytes, createHash } from 'node:crypto';
import { chmod, open, readFile, readdir, rename, stat, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../lib/log.ts';
import { PRIVATE_FILE_MODE, ensurePrivateDir } from '../../lib/private-files.ts';
import { CACHE_TTL_MS, type CachedFile, type RenderCache } from './cache.ts';
import { FailureLog } from './failure-log.ts';
import { localFlights } from './flight.ts';
import { DEFAULT_HOT_BYTES, HotEntries } from './hot.ts';

export interface FileCacheOptions {
  dir: string;
  maxBytes: number;
  logger: Logger;
  now?: () => number;
  ttlMs?: number;
  /** Bytes of entries also held in memory; DEFAULT_HOT_BYTES (at most maxBytes) by default, 0 for none. */
  hotBytes?: number;
}

interface Header {
  key: string;
  contentType: string;
  expiresAt: number;
}

interface Entry {
  size: number;
  expiresAt: number;
}

const TEMP_PREFIX = '.tmp-';

function fileName(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** Entry layout: 4-byte big-endian header length, the header as JSON, then the body. */
function encode(header: Header, body: Buffer): Buffer {
  const head = Buffer.from(JSON.stringify(header), 'utf8');
  const len = Buffer.alloc(4);
  len.writeUInt32BE(head.length, 0);
  return Buffer.concat([len, head, body]);
}

function decodeHeader(buf: Buffer): { header: Header; bodyStart: number } | undefined {
  if (buf.length < 4) return undefined;
  const len = buf.readUInt32BE(0);
  if (buf.length < 4 + len) return undefined;
  try {
    const header = JSON.parse(buf.subarray(4, 4 + len).toString('utf8')) as Header;
    if (typeof header.key !== 'string' || typeof header.contentType !== 'string' || typeof header.expiresAt !== 'number') {
      return undefined;
    }
    return { header, bodyStart: 4 + len };
  } catch {
    return undefined;
  }
}

async function readHead(file: string): Promise<Header | undefined> {
  const fh = await open(file, 'r');
  try {
    const first = Buffer.alloc(4);
    await fh.read(first, 0, 4, 0);
    const len = first.readUInt32BE(0);
    if (len > 64 * 1024) return undefined;
    const rest = Buffer.alloc(len);
    await fh.read(rest, 0, len, 4);
    return decodeHeader(Buffer.concat([first, rest]))?.header;
  } finally {
    await fh.close();
  }
}

export class FileCache implements RenderCache {
  private readonly dir: string;
  private readonly maxBytes: number;
  private readonly now: () => number;
  private readonly ttlMs: number;
  /** Entries by file name, oldest first (Map keeps insertion order; a re-store moves to the end). */
  private readonly entries = new Map<string, Entry>();
  private total = 0;
  private started = false;
  private readonly hot: HotEntries;
  private readonly storeFailures: FailureLog;
  /** One process holds this cache: its flights are this process's (flight.ts). */
  readonly flight = localFlights();

  constructor(options: FileCacheOptions) {
    this.dir = options.dir;
    this.maxBytes = options.maxBytes;
    this.now = options.now ?? Date.now;
    this.ttlMs = options.ttlMs ?? CACHE_TTL_MS;
    this.hot = new HotEntries(options.hotBytes ?? Math.min(DEFAULT_HOT_BYTES, options.maxBytes));
    this.storeFailures = new FailureLog(options.logger, 'cache.store', { backend: 'file' });
  }

  /** Bytes currently held, headers included. */
  size(): number {
    return this.total;
  }

  async start(): Promise<void> {
    // Entries are other callers' renders: the directory 0700, every entry and temp file 0600.
    ensurePrivateDir(this.dir);
    const found: Array<{ name: string; mtime: number; size: number; expiresAt: number }> = [];
    for (const name of await readdir(this.dir)) {
      const file = path.join(this.dir, name);
      try {
        if (name.startsWith(TEMP_PREFIX)) {
          await unlink(file); // left by a write that never finished
          continue;
        }
        const head = await readHead(file);
        const st = await stat(file);
        if (head === undefined || head.expiresAt <= this.now() || fileName(head.key) !== name) {
          await unlink(file);
          continue;
        }
        if ((st.mode & 0o777) !== PRIVATE_FILE_MODE) await chmod(file, PRIVATE_FILE_MODE); // left by an older version
        found.push({ name, mtime: st.mtimeMs, size: st.size, expiresAt: head.expiresAt });
      } catch {
        // A file that vanished or cannot be read is simply not part of the cache.
      }
    }
    found.sort((a, b) => a.mtime - b.mtime);
    for (const f of found) this.track(f.name, { size: f.size, expiresAt: f.expiresAt });
    await this.evict();
    this.started = true;
  }

  async stop(): Promise<void> {
    this.started = false;
    this.hot.clear();
  }

  healthy(): boolean {
    return this.started;
  }

  async get(key: string): Promise<CachedFile | undefined> {
    const name = fileName(key);
    const hot = this.hot.get(name);
    if (hot !== undefined && hot.key === key) {
      if (hot.expiresAt <= this.now()) {
        await this.remove(name);
        return undefined;
      }
      return { body: hot.body, contentType: hot.contentType };
    }
    let buf: Buffer;
    try {
      buf = await readFile(path.join(this.dir, name));
    } catch {
      return undefined;
    }
    const decoded = decodeHeader(buf);
    if (decoded === undefined || decoded.header.key !== key) return undefined;
    if (decoded.header.expiresAt <= this.now()) {
      await this.remove(name);
      return undefined;
    }
    const body = buf.subarray(decoded.bodyStart);
    // Only an entry the size bound still counts is held hot, so eviction reaches it too.
    if (this.entries.has(name)) this.hot.set(name, { key, body, contentType: decoded.header.contentType, expiresAt: decoded.header.expiresAt });
    return { body, contentType: decoded.header.contentType };
  }

  async set(key: string, file: CachedFile): Promise<void> {
    const name = fileName(key);
    const expiresAt = this.now() + this.ttlMs;
    const data = encode({ key, contentType: file.contentType, expiresAt }, file.body);
    if (data.length > this.maxBytes) return; // would evict everything and still not fit
    const temp = path.join(this.dir, `${TEMP_PREFIX}${name}-${randomBytes(6).toString('hex')}`);
    try {
      // `wx`: a fresh file, so the mode applies (and rename keeps it).
      await writeFile(temp, data, { mode: PRIVATE_FILE_MODE, flag: 'wx' });
      await rename(temp, path.join(this.dir, name));
    } catch (err) {
      // Skipped, never failed (RenderCache.set): a full disk answers every render uncached, and
      // says so once, not once per render.
      this.storeFailures.failed(err);
      await unlink(temp).catch(() => undefined);
      return;
    }
    this.storeFailures.succeeded();
    this.track(name, { size: data.length, expiresAt });
    // Held hot only once the file is in place: a reader sees the old entry or the new one, whole.
    this.hot.set(name, { key, body: data.subarray(data.length - file.body.length), contentType: file.contentType, expiresAt });
    await this.evict();
  }

  private track(name: string, entry: Entry): void {
    const old = this.entries.get(name);
    if (old !== undefined) {
      this.total -= old.size;
      this.entries.delete(name);
    }
    this.entries.set(name, entry);
    this.total += entry.size;
  }

  private async remove(name: string): Promise<void> {
    this.hot.delete(name);
    const old = this.entries.get(name);
    if (old !== undefined) {
      this.total -= old.size;
      this.entries.delete(name);
    }
    await unlink(path.join(this.dir, name)).catch(() => undefined);
  }

  /** Drops expired entries, then the oldest, until the total is within the bound. */
  private async evict(): Promise<void> {
    const now = this.now();
    for (const [name, e] of [...this.entries]) if (e.expiresAt <= now) await this.remove(name);
    for (const name of this.entries.keys()) {
      if (this.total <= this.maxBytes) break;
      await this.remove(name);
    }
  }
}
