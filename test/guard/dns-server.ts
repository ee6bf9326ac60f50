/**
 * A tiny authoritative DNS server on loopback UDP for the guard's tests: it answers A and
 * AAAA queries from a function the test writes, so answers can be several, private, changing
 * between queries (rebinding), AAAA-only, NXDOMAIN, empty, SERVFAIL or missing altogether.
 */
import dgram from 'node:dgram';
import net from 'node:net';

export type QueryType = 'A' | 'AAAA' | 'OTHER';

/** What the server answers to one query. `drop`: no answer at all (the client times out). */
export type Answer = { rcode?: number; addresses?: string[] } | 'drop';

/** The zone: name (lower case, no trailing dot), type, and how many times it was asked before. */
export type Zone = (name: string, type: QueryType, asked: number) => Answer;

export const NXDOMAIN = 3;
export const SERVFAIL = 2;

export interface DnsServer {
  /** `127.0.0.1:<port>`, for GUARD_DNS_SERVERS. */
  server: string;
  /** How many queries of this name and type arrived. */
  count(name: string, type: QueryType): number;
  close(): Promise<void>;
}

function readName(msg: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let i = offset;
  while (i < msg.length) {
    const len = msg[i]!;
    if (len === 0) return { name: labels.join('.'), end: i + 1 };
    labels.push(msg.subarray(i + 1, i + 1 + len).toString('latin1'));
    i += 1 + len;
  }
  throw new Error('truncated name');
}

function rdata(address: string): { type: number; bytes: Buffer } {
  if (net.isIPv4(address)) return { type: 1, bytes: Buffer.from(address.split('.').map(Number)) };
  // Expand an IPv6 address to 16 bytes (no embedded dotted tail in test zones).
  const [head, tail] = address.includes('::') ? address.split('::') : [address, undefined];
  const h = head === '' ? [] : head!.split(':');
  const t = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  const bytes = Buffer.alloc(16);
  groups.forEach((g, i) => bytes.writeUInt16BE(parseInt(g, 16), i * 2));
  return { type: 28, bytes };
}

export async function startDnsServer(zone: Zone): Promise<DnsServer> {
  const socket = dgram.createSocket('udp4');
  const counts = new Map<string, number>();
  socket.on('message', (msg, rinfo) => {
    if (msg.length < 12) return;
    const { name: rawName, end } = readName(msg, 12);
    const qtype = msg.readUInt16BE(end);
    const name = rawName.toLowerCase();
    const type: QueryType = qtype === 1 ? 'A' : qtype === 28 ? 'AAAA' : 'OTHER';
    const key = `${name}/${type}`;
    const asked = counts.get(key) ?? 0;
    counts.set(key, asked + 1);
    const answer = zone(name, type, asked);
    if (answer === 'drop') return;
    const addresses = (answer.addresses ?? []).map(rdata).filter((r) => r.type === qtype);
    const header = Buffer.alloc(12);
    msg.copy(header, 0, 0, 2);
    const rd = msg[2]! & 0x01;
    header[2] = 0x84 | rd; // QR, authoritative, RD copied
    header[3] = 0x80 | (answer.rcode ?? 0); // RA, rcode
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(addresses.length, 6);
    const question = msg.subarray(12, end + 4);
    const records = addresses.map((r) => {
      const rr = Buffer.alloc(12);
      rr.writeUInt16BE(0xc00c, 0); // pointer to the question's name
      rr.writeUInt16BE(r.type, 2);
      rr.writeUInt16BE(1, 4); // class IN
      rr.writeUInt32BE(5, 6); // TTL
      rr.writeUInt16BE(r.bytes.length, 10);
      return Buffer.concat([rr, r.bytes]);
    });
    socket.send(Buffer.concat([header, question, ...records]), rinfo.port, rinfo.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    server: `127.0.0.1:${socket.address().port}`,
    count: (name, type) => counts.get(`${name}/${type}`) ?? 0,
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };
}
