/** Renderer pods for the controller's tests: small servers on loopback addresses answering `/state`. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RendererStateReport } from '../../lib/state-contract.ts';
import { STATE_PATH } from '../../lib/state-contract.ts';

export interface FakeRenderer {
  name: string;
  ip: string;
  port: number;
  /** What `/state` answers; change it to change the pod's load (busy now, busyMean over the last seconds) or guard. */
  state: RendererStateReport;
  /** The Pod object as the API server would hold it. */
  pod(ready?: boolean): any;
  close(): Promise<void>;
}

export const POD_LABELS = { app: 'renderer' };

export async function startFakeRenderer(name: string, ip: string): Promise<FakeRenderer> {
  const r: { state: RendererStateReport } = { state: { slots: 2, busy: 0, busyMean: 0, guard: 'verified', draining: false } };
  const server = http.createServer((req, res) => {
    if (req.url === STATE_PATH) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(r.state));
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, ip, resolve));
  const port = (server.address() as AddressInfo).port;
  return Object.assign(r, {
    name, ip, port,
    pod: (ready = true) => ({
      metadata: { name, labels: { ...POD_LABELS, 'pod-template-hash': 'abc' } },
      spec: { containers: [{ name: 'renderer', ports: [{ name: 'http', containerPort: 8082 }, { name: 'admin', containerPort: port }] }] },
      status: {
        phase: 'Running', podIP: ip,
        conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }, { type: 'ContainersReady', status: ready ? 'True' : 'False' }],
      },
    }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  });
}
