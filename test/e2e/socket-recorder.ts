/**
 * Preloaded into a `tintype start` a test runs (`ServiceOptions.recordSockets`): appends one line
 * per TCP port any server of the process starts or stops listening on and per connection one accepts, to
 * the file named by TINTYPE_TEST_SOCKET_LOG. It observes and changes nothing, so a test can count
 * what reached the real service's own listeners.
 */
import { appendFileSync } from 'node:fs';
import net from 'node:net';

const file = process.env['TINTYPE_TEST_SOCKET_LOG'];
if (file !== undefined) {
  type Emit = (this: net.Server, event: string | symbol, ...args: unknown[]) => boolean;
  const emit = net.Server.prototype.emit as Emit;
  const ports = new WeakMap<net.Server, string>();
  net.Server.prototype.emit = function (this: net.Server, event: string | symbol, ...args: unknown[]): boolean {
    if (event === 'listening') {
      const a = this.address();
      if (a !== null && typeof a !== 'string') {
        ports.set(this, `${a.address} ${a.port}`);
        appendFileSync(file, `listen ${process.pid} ${a.address} ${a.port}\n`);
      }
    } else if (event === 'close' && ports.has(this)) {
      appendFileSync(file, `close ${process.pid} ${ports.get(this)}\n`);
    } else if (event === 'connection') {
      const s = args[0] as net.Socket;
      if (s.localPort !== undefined) appendFileSync(file, `accept ${process.pid} ${s.localAddress} ${s.localPort}\n`);
    }
    return emit.call(this, event, ...args);
  } as typeof net.Server.prototype.emit;
}
