/**
 * CDP over the browser container's unix socket (docs/architecture.md §3): a puppeteer
 * ConnectionTransport speaking the pipe's NUL-delimited framing on a socket the launcher
 * (launcher/main.ts) bridges to Chromium's `--remote-debugging-pipe`. The launcher's own frames
 * (`Tintype.*`: launched, refused, memory) are taken here and never reach puppeteer.
 */
import net from 'node:net';
import puppeteer, { type Browser, type ConnectionTransport } from 'puppeteer-core';
import { frame, FrameSplitter, LAUNCHED, MEMORY, REFUSED, type Launched, type LaunchRequest } from './launcher/framing.ts';

const LAUNCH_TIMEOUT_MS = 30_000;
/** Room in a frame beyond its base64 payload: the JSON around a screenshot's data. */
const FRAME_ENVELOPE_BYTES = 1024 * 1024;

/**
 * The largest frame taken from the browser container: a screenshot of `maxOutputBytes` in base64,
 * and its envelope. Past it the connection is dropped (docs/security.md "The browser container"):
 * an unended frame is never held without bound, and its output would be refused anyway (spec Part 7).
 */
export function maxFrameBytes(maxOutputBytes: number): number {
  return Math.ceil(maxOutputBytes / 3) * 4 + FRAME_ENVELOPE_BYTES;
}

/** A browser the launcher started for this connection. */
export interface SocketBrowser {
  readonly browser: Browser;
  /** What the launcher said of it: Chromium's pid in the launcher's PID namespace, its sandbox. */
  readonly launched: Launched;
  /** Chromium's memory as the launcher last reported it (bytes; 0 before the first report). */
  memoryBytes(): number;
}

const launchedBy = new WeakMap<Browser, Launched>();
const transportOf = new WeakMap<Browser, SocketTransport>();

/** What the launcher said of a browser it started (undefined for one puppeteer launched itself). */
export function launcherReport(browser: Browser): Launched | undefined {
  return launchedBy.get(browser);
}

/** True once `browser`'s connection was dropped for a frame past its bound (its renders answer render_too_large). */
export function droppedForSize(browser: Browser): boolean {
  return transportOf.get(browser)?.oversized === true;
}

/** The launcher's frames, told apart from CDP's. */
function launcherFrame(message: string): { method: string; params: Record<string, unknown> } | undefined {
  // CDP's own messages never name the launcher's domain; only those are parsed here.
  if (!message.includes('"Tintype.')) return undefined;
  try {
    const m = JSON.parse(message) as { method?: unknown; params?: unknown; id?: unknown };
    if (m.id === undefined && typeof m.method === 'string' && m.method.startsWith('Tintype.')) {
      return { method: m.method, params: (m.params ?? {}) as Record<string, unknown> };
    }
  } catch {
    // not JSON: puppeteer says so
  }
  return undefined;
}

class SocketTransport implements ConnectionTransport {
  onclose?: () => void;
  memory = 0;
  /** Set when a frame passed the bound and the connection was dropped for it. */
  oversized = false;
  private receiver: ((message: string) => void) | undefined;
  /** CDP frames that arrived before puppeteer listened. */
  private queued: string[];

  constructor(
    private readonly socket: net.Socket,
    splitter: FrameSplitter,
    early: string[],
  ) {
    this.queued = [];
    for (const m of early) this.deliver(m);
    socket.on('data', (chunk: Buffer) => {
      let messages: string[];
      try {
        messages = splitter.push(chunk);
      } catch {
        // FrameTooLarge, the splitter's one failure: nothing after it can be trusted.
        this.oversized = true;
        socket.destroy();
        return;
      }
      for (const m of messages) this.deliver(m);
    });
    socket.on('close', () => this.onclose?.call(null));
  }

  get onmessage(): ((message: string) => void) | undefined {
    return this.receiver;
  }

  set onmessage(receiver: ((message: string) => void) | undefined) {
    this.receiver = receiver;
    if (receiver === undefined) return;
    for (const m of this.queued.splice(0)) receiver.call(null, m);
  }

  private deliver(message: string): void {
    const own = launcherFrame(message);
    if (own !== undefined) {
      if (own.method === MEMORY && typeof own.params['bytes'] === 'number') this.memory = own.params['bytes'];
      return;
    }
    if (this.receiver === undefined) this.queued.push(message);
    else this.receiver.call(null, message);
  }

  send(message: string): void {
    if (!this.socket.destroyed) this.socket.write(frame(message));
  }

  close(): void {
    this.socket.destroy();
  }
}

/**
 * Asks the launcher at `socketPath` for a browser with `args`, and connects puppeteer to it. A
 * frame longer than `maxFrame` bytes drops the connection (before the launcher's answer too).
 */
export async function connectSocketBrowser(socketPath: string, args: string[], maxFrame: number): Promise<SocketBrowser> {
  const socket = net.connect({ path: socketPath });
  const splitter = new FrameSplitter(maxFrame);
  let launched: Launched;
  let early: string[];
  try {
    [launched, early] = await new Promise<[Launched, string[]]>((resolve, reject) => {
      const timer = setTimeout(() => fail(new Error('the browser launcher did not answer')), LAUNCH_TIMEOUT_MS);
      const fail = (err: Error): void => {
        clearTimeout(timer);
        socket.off('data', onData);
        reject(err);
      };
      const onData = (chunk: Buffer): void => {
        let frames: string[];
        try {
          frames = splitter.push(chunk);
        } catch {
          fail(new Error('the browser launcher sent a frame past the bound'));
          return;
        }
        const [first, ...rest] = frames;
        if (first === undefined) return;
        const own = launcherFrame(first);
        if (own?.method === LAUNCHED) {
          clearTimeout(timer);
          socket.off('data', onData);
          socket.pause();
          resolve([own.params as unknown as Launched, rest]);
        } else if (own?.method === REFUSED) {
          fail(new Error(`the browser launcher refused: ${String(own.params['reason'])}`));
        } else {
          fail(new Error('the browser launcher answered something else'));
        }
      };
      socket.on('data', onData);
      socket.once('error', (err) => fail(new Error(`the browser launcher cannot be reached: ${err.message}`)));
      socket.once('close', () => fail(new Error('the browser launcher closed the connection')));
      const request: LaunchRequest = { args };
      socket.write(frame(JSON.stringify(request)));
    });
  } catch (err) {
    socket.destroy();
    throw err;
  }
  socket.removeAllListeners('error');
  socket.removeAllListeners('close');
  socket.on('error', () => socket.destroy());
  const transport = new SocketTransport(socket, splitter, early);
  socket.resume();
  try {
    const browser = await puppeteer.connect({ transport, defaultViewport: null });
    launchedBy.set(browser, launched);
    transportOf.set(browser, transport);
    return { browser, launched, memoryBytes: () => transport.memory };
  } catch (err) {
    socket.destroy();
    throw err;
  }
}
