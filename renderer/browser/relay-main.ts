/**
 * The relay process, started inside the browser's network namespace by the launcher
 * (netns-launcher.ts) before Chromium is exec'd there. It listens on the namespace's loopback
 * (refusing proxy and lane relays) and dials out only to the guard's unix socket. It takes its
 * orders from the renderer over the control socket named by its one argument, and exits when
 * that socket closes.
 */
import net from 'node:net';
import { renderAuthorization } from '../../lib/guard-contract.ts';
import { dialGuard } from './guard-endpoint.ts';
import { NETNS_FIRST_LANE_PORT, NETNS_REFUSE_PORT, readMessages, send, type FromRelay, type ToRelay } from './relay-protocol.ts';
import { startRelays } from './relay-set.ts';

const controlPath = process.argv[2];
if (controlPath === undefined) {
  process.stderr.write('usage: relay-main <control socket>\n');
  process.exit(64);
}

const control = net.connect({ path: controlPath });
control.on('error', () => process.exit(1));
control.on('close', () => process.exit(0));

let relays: Awaited<ReturnType<typeof startRelays>> | undefined;

readMessages<ToRelay>(control, (message) => {
  if (message.t === 'config' && relays === undefined) {
    const guard = message.guard;
    startRelays({
      lanes: message.lanes,
      dial: () => dialGuard(guard),
      maxOpenPerLane: message.maxOpenPerLane,
      refusePort: NETNS_REFUSE_PORT,
      lanePorts: Array.from({ length: message.lanes }, (_, i) => NETNS_FIRST_LANE_PORT + i),
    }).then(
      (set) => {
        relays = set;
        send<FromRelay>(control, { t: 'ready', refuse: set.refuseAddress, lanes: [...set.laneAddresses] });
      },
      (err: Error) => {
        send<FromRelay>(control, { t: 'log', level: 'error', event: 'relay.listen_failed', detail: err.message });
        control.end(() => process.exit(1));
      },
    );
  } else if (message.t === 'token' && relays !== undefined) {
    const relay = relays.lanesRelays[message.lane];
    relay?.setAuthorization(message.token === null ? undefined : renderAuthorization(message.token));
    send<FromRelay>(control, { t: 'ack', id: message.id });
  }
});
