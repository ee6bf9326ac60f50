/**
 * The renderer's side of the browser container's socket (renderer/browser/socket-transport.ts;
 * docs/security.md "The browser container"): a frame from the launcher is held only up to a bound
 * (a screenshot of TINTYPE_MAX_OUTPUT_BYTES in base64 and its envelope); past it the connection is
 * dropped, whoever sends it. A real Chromium whose screenshot passes the bound answers
 * render_too_large (spec Part 7) and the pool serves on with a new browser.
 */
import { rmSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import t from 'tap';
import { ServiceError } from '../../../lib/errors.ts';
import { frame } from '../../../renderer/browser/launcher/framing.ts';
import { connectSocketBrowser, maxFrameBytes } from '../../../renderer/browser/socket-transport.ts';
import type { RenderContext } from '../../../renderer/browser/types.ts';
import { inProcess, startGuard, startPool, tempDir } from './helpers.ts';

const CHUNK = Buffer.alloc(1024 * 1024, 0x61); // 'a', never a NUL: one frame that does not end

t.test('a launcher that never ends a frame: the connection is dropped past the bound, nothing held beyond it', async (t) => {
  const dir = tempDir(t, 'tintype-frame-');
  const socketPath = path.join(dir, 'cdp.sock');
  const bound = maxFrameBytes(1024 * 1024);
  // Far past the bound: reaching it means the renderer kept reading without dropping the connection.
  const ceiling = 16 * bound;
  let sent = 0;
  let dropped = false;
  const server = net.createServer((socket) => {
    socket.on('error', () => {});
    socket.once('close', () => (dropped = true));
    socket.once('data', () => {
      socket.write(frame(JSON.stringify({ method: 'Tintype.launched', params: { pid: 1, sandbox: true } })));
      const pump = (): void => {
        while (!socket.destroyed && sent < ceiling) {
          sent += CHUNK.length;
          if (!socket.write(CHUNK)) {
            socket.once('drain', pump);
            return;
          }
        }
        if (sent >= ceiling) socket.end();
      };
      pump();
    });
  });
  await new Promise<void>((r) => server.listen(socketPath, r));
  t.teardown(() => {
    server.close();
    rmSync(socketPath, { force: true });
  });
  await t.rejects(connectSocketBrowser(socketPath, [], bound), 'no browser from it');
  await new Promise<void>((resolve) => {
    const check = (): void => (dropped || sent >= ceiling ? resolve() : void setTimeout(check, 20));
    check();
  });
  t.ok(dropped, 'the renderer dropped the connection');
  t.ok(sent < ceiling, `it stopped reading well before ${ceiling} bytes (sent ${sent}, bound ${bound})`);
});

t.test('a real Chromium whose screenshot passes the bound: render_too_large, and the next render is served', async (t) => {
  const g = await startGuard(t);
  const maxOutputBytes = 8 * 1024;
  const pool = await startPool(t, inProcess(g), { config: { isolation: 'pod', maxOutputBytes } });
  const noise = async (ctx: RenderContext): Promise<Buffer> => {
    // Random pixels do not compress: the PNG is several times the whole bound.
    await ctx.cdp.setViewport({ width: 600, height: 600, deviceScaleFactor: 1 });
    await ctx.cdp.evaluate(`(() => {
      const c = document.createElement('canvas'); c.width = 600; c.height = 600; document.body.style.margin = '0';
      const g = c.getContext('2d'); const img = g.createImageData(600, 600);
      for (let i = 0; i < img.data.length; i++) img.data[i] = Math.floor(Math.random() * 256);
      g.putImageData(img, 0, 0); document.body.appendChild(c);
    })()`);
    return ctx.cdp.screenshot({ format: 'png', omitBackground: false });
  };
  const err = await pool.render({ deadline: Date.now() + 30_000, run: noise }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof ServiceError && err.code === 'render_too_large', `render_too_large (got ${String(err)})`);
  const small = await pool.render({
    deadline: Date.now() + 60_000,
    run: async (ctx) => {
      await ctx.cdp.setViewport({ width: 10, height: 10, deviceScaleFactor: 1 });
      return ctx.cdp.screenshot({ format: 'png', omitBackground: false });
    },
  });
  t.ok(small.value.length > 0 && small.value.length < maxOutputBytes, 'a small screenshot after it is served');
});
