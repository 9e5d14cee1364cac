import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';

/**
 * A tiny authoritative DNS server over UDP on 127.0.0.1 (RFC 1035 section 4):
 * A and AAAA answers from `zone`, NOERROR with no answer for a known name's
 * missing type, NXDOMAIN for anything else. Enough for a resolver test, and
 * it records every question it is asked.
 */
export async function startDnsServer(zone: Record<string, { a?: string[]; aaaa?: string[] }>) {
  const asked: string[] = [];
  const socket = createSocket('udp4');
  socket.on('message', (query, peer) => {
    let offset = 12;
    const labels: string[] = [];
    while (query[offset]! > 0) {
      labels.push(query.subarray(offset + 1, offset + 1 + query[offset]!).toString('ascii'));
      offset += query[offset]! + 1;
    }
    const name = labels.join('.').toLowerCase();
    const type = query.readUInt16BE(offset + 1);
    const question = query.subarray(12, offset + 5);
    asked.push(`${name} ${type === 1 ? 'A' : type === 28 ? 'AAAA' : type}`);
    const entry = zone[name];
    const addresses = (type === 1 ? entry?.a : type === 28 ? entry?.aaaa : undefined) ?? [];
    const answers = addresses.map((address) => {
      const rdata = type === 1 ? Buffer.from(address.split('.').map(Number)) : ipv6Bytes(address);
      const head = Buffer.alloc(12);
      head.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
      head.writeUInt16BE(type, 2);
      head.writeUInt16BE(1, 4); // class IN
      head.writeUInt32BE(60, 6); // TTL
      head.writeUInt16BE(rdata.length, 10);
      return Buffer.concat([head, rdata]);
    });
    const header = Buffer.alloc(12);
    query.copy(header, 0, 0, 2); // the query's id
    header.writeUInt16BE(0x8180 | (entry ? 0 : 3), 2); // response, recursion desired and available; NXDOMAIN when unknown
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length, 6);
    socket.send(Buffer.concat([header, question, ...answers]), peer.port, peer.address);
  });
  socket.bind(0, '127.0.0.1');
  await once(socket, 'listening');
  const { port } = socket.address() as AddressInfo;
  return { server: `127.0.0.1:${port}`, asked, close: () => new Promise<void>((resolve) => socket.close(() => resolve())) };
}

function ipv6Bytes(address: string): Buffer {
  const [head = '', tail = ''] = address.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = address.includes('::') ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right] : left;
  const out = Buffer.alloc(16);
  for (const [i, g] of groups.entries()) out.writeUInt16BE(Number.parseInt(g, 16), i * 2);
  return out;
}
