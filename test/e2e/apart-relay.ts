/**
 * A TCP listener that relays each connection to a unix socket: run inside a namespace, it puts
 * a service of the host (reached over a socket file, which crosses namespaces) at an address of
 * the namespace, as a Service address puts the cache in front of a pod.
 * Usage: apart-relay.ts <listen host> <listen port> <unix socket>
 */
import net from 'node:net';

const [host, port, socket] = process.argv.slice(2);
if (host === undefined || port === undefined || socket === undefined) throw new Error('usage: apart-relay.ts <host> <port> <socket>');
const server = net.createServer((client) => {
  const upstream = net.connect(socket);
  client.pipe(upstream).pipe(client);
  const end = (): void => {
    client.destroy();
    upstream.destroy();
  };
  for (const s of [client, upstream]) {
    s.once('error', end);
    s.once('close', end);
  }
});
server.listen(Number(port), host, () => process.stdout.write('relay.ready\n'));
process.once('SIGTERM', () => process.exit(0));
