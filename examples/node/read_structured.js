'use strict';
// Reads a Polytope world through structured snapshots (protocol/STANDARD.md section 14) with nothing but
// the npm flatbuffers package, code that flatc generates from protocol/schema/polytope.fbs (`npm run
// build`) and a UDP socket. Connects without a token (a server run with --insecure), prints a few bodies of
// each complete snapshot in metres and as quaternions, and exits 0 after --snapshots ticks (1 on time-out).
const dgram = require('dgram');
const flatbuffers = require('flatbuffers');
const w = require('./gen-js/polytope_generated.js');

const opt = { host: '127.0.0.1', port: 40000, snapshots: 20, timeout: 20, bodies: 3, velocities: false };
for (let i = 2; i < process.argv.length; i++) {
  const key = process.argv[i].replace(/^--/, '');
  opt[key] = key === 'velocities' ? true : (key === 'host' ? process.argv[++i] : Number(process.argv[++i]));
}
const PROTOCOL_ID = 0x50544c50, VERSION = 6, ACK_VALID = 1, ID_SPACE = 2 ** 32;
const T = w.PacketType;

// CRC-32 as zlib's (reflected 0xEDB88320): the checksum of a range's 28-byte body records.
const CRC = Array.from({ length: 256 }, (_, n) => {
  for (let k = 0; k < 8; k++) n = n & 1 ? 0xedb88320 ^ (n >>> 1) : n >>> 1;
  return n >>> 0;
});
const crc32 = (bytes) => (bytes.reduce((c, b) => CRC[(c ^ b) & 0xff] ^ (c >>> 8), 0xffffffff) ^ 0xffffffff) >>> 0;
function records(bodies) {
  const out = Buffer.alloc(28 * bodies.length);
  bodies.forEach((r, i) => {
    const o = 28 * i;
    [r.id, r.gen, ...r.pos].forEach((v, k) => out.writeUInt32LE(v, o + 4 * k));
    r.codes.forEach((v, k) => out.writeUInt16LE(v, o + 20 + 2 * k));
    out[o + 26] = r.largest;
    out[o + 27] = r.rest ? 1 : 0;
  });
  return out;
}

// Our sequence numbers, and the server's we recorded (STANDARD.md 2.1): newest and a mask of the 32 before.
let next = 0, newest = null, seen = new Set();
const age = (s) => (newest - s + 65536) % 65536;
function record(seq) {
  if (newest === null || ((seq - newest + 65536) % 65536 > 0 && (seq - newest + 65536) % 65536 < 32768)) newest = seq;
  seen = new Set([...seen, seq].filter((s) => age(s) <= 32));
}
function packet(type, build) {
  const b = new flatbuffers.Builder(1024);
  const message = build(b);
  w.Packet.startPacket(b);
  let bits = 0;
  for (let i = 0; newest !== null && i < 32; i++) if (seen.has((newest - 1 - i + 65536) % 65536)) bits |= 1 << i;
  w.Packet.addHeader(b, w.PacketHeader.createPacketHeader(b, PROTOCOL_ID, VERSION, type,
    newest === null ? 0 : ACK_VALID, next, newest ?? 0, bits >>> 0));
  next = (next + 1) % 65536;
  w.Packet.addMessageType(b, type);
  w.Packet.addMessage(b, message);
  w.Packet.finishPacketBuffer(b, w.Packet.endPacket(b));
  return b.asUint8Array();
}
function join(b) {
  const padding = w.ConnectRequest.createPaddingVector(b, new Uint8Array(512)); // requests: >= 512 bytes
  const name = b.createString('node-reader');
  if (cookie === null) {
    w.ConnectRequest.startConnectRequest(b);
    w.ConnectRequest.addClientName(b, name);
    w.ConnectRequest.addPadding(b, padding);
    return w.ConnectRequest.endConnectRequest(b);
  }
  const echoed = w.ChallengeResponse.createCookieVector(b, cookie);
  w.ChallengeResponse.startChallengeResponse(b);
  w.ChallengeResponse.addCookie(b, echoed);
  w.ChallengeResponse.addClientName(b, name);
  w.ChallengeResponse.addPadding(b, padding);
  w.ChallengeResponse.addSpectator(b, true);
  w.ChallengeResponse.addSnapshotFormat(b, w.SnapshotFormat.Structured);
  w.ChallengeResponse.addSnapshotVelocities(b, opt.velocities);
  return w.ChallengeResponse.endChallengeResponse(b);
}
const ack = (b) => { w.ClientInput.startClientInput(b); return w.ClientInput.endClientInput(b); };

// Smallest three: each code is k + 2047 for k / (sqrt(2) 2047); the dropped component is >= 0.
function quaternion(largest, codes) {
  const q = codes.map((c) => (c - 2047) / (Math.SQRT2 * 2047));
  q.splice(largest, 0, Math.sqrt(Math.max(0, 1 - q.reduce((s, v) => s + v * v, 0))));
  return q;
}

const sock = dgram.createSocket('udp4');
const send = (bytes) => sock.send(bytes, opt.port, opt.host);
let cookie = null, accepted = null, shown = 0;
const complete = new Map(), partial = new Map(), velocity = new Map();
const handshake = setInterval(() => accepted || send(packet(cookie ? T.ChallengeResponse : T.ConnectRequest, join)), 100);
const deadline = setTimeout(() => { console.error('timed out'); process.exit(1); }, opt.timeout * 1000);

function applySlice(s, seq) {
  const tick = s.tick(), first = s.firstId(), end = Number(s.endId());
  const part = partial.get(tick) ?? { ranges: new Set(), covered: 0, bodies: new Map() };
  if (complete.has(tick) || part.ranges.has(`${first}:${end}`)) return record(seq); // a duplicate
  if (s.hasBaseline() && !complete.has(s.baselineTick())) return; // never named by a server: ignore it
  const base = s.hasBaseline() ? complete.get(s.baselineTick()) : new Map();
  const bodies = new Map([...base].filter(([id]) => id >= first && id < end));
  for (let k = 0; k < s.removedLength(); k++) bodies.delete(s.removed(k));
  for (let k = 0; k < s.bodiesLength(); k++) {
    const b = s.bodies(k);
    bodies.set(b.id(), { id: b.id(), gen: b.generation(), pos: [b.positionX(), b.positionY(), b.positionZ()],
      codes: [b.orientationA(), b.orientationB(), b.orientationC()], largest: b.largest(), rest: b.atRest() });
    if (s.velocitiesLength() > 0) velocity.set(b.id(), s.velocities(k).linear().y());
  }
  const sorted = [...bodies.values()].sort((a, b) => a.id - b.id);
  if (crc32(records(sorted)) !== s.checksum()) return; // not the server's state: do not acknowledge
  record(seq);
  part.ranges.add(`${first}:${end}`);
  part.covered += end - first;
  sorted.forEach((r) => part.bodies.set(r.id, r));
  partial.set(tick, part);
  if (part.covered !== ID_SPACE) return;
  partial.delete(tick);
  complete.set(tick, part.bodies);
  for (const t of complete.keys()) if (t + BigInt(accepted.maxBaselineAgeTicks()) < tick) complete.delete(t);
  console.log(`tick ${tick}: ${part.bodies.size} bodies`);
  const lo = accepted.boundsMin(), origin = [lo.x(), lo.y(), lo.z()], step = 1 / accepted.stepsPerMetre();
  for (const r of [...part.bodies.values()].sort((a, b) => a.id - b.id).slice(0, opt.bodies)) {
    const p = r.pos.map((c, a) => (origin[a] + c * step).toFixed(3)).join(' ');
    const q = quaternion(r.largest, r.codes).map((v) => v.toFixed(4)).join(' ');
    const v = opt.velocities ? ` v ${(velocity.get(r.id) ?? 0).toFixed(2)}` : '';
    console.log(`  body ${r.id} gen ${r.gen} pos ${p} quat ${q} rest ${r.rest ? 1 : 0}${v}`);
  }
  if (++shown >= opt.snapshots) { clearInterval(handshake); clearTimeout(deadline); sock.close(); }
}

sock.on('message', (msg) => {
  if (msg.length < 32 || msg.toString('latin1', 4, 8) !== 'PLTP') return;
  const p = w.Packet.getRootAsPacket(new flatbuffers.ByteBuffer(new Uint8Array(msg)));
  const seq = p.header().sequence();
  if (p.messageType() === T.Challenge && cookie === null) {
    cookie = p.message(new w.Challenge()).cookieArray().slice();
    send(packet(T.ChallengeResponse, join));
    return;
  } else if (p.messageType() === T.ConnectAccepted && accepted === null) {
    accepted = p.message(new w.ConnectAccepted());
    console.log(`connected: scene ${accepted.scene()}, ${accepted.snapshotRateHz()} Hz`);
    record(seq);
  } else if (p.messageType() === T.StructuredSnapshot && accepted !== null) {
    applySlice(p.message(new w.StructuredSnapshot()), seq);
  } else if (p.messageType() === T.Catalogue || p.messageType() === T.KeepAlive) {
    record(seq);
  }
  if (accepted !== null && shown < opt.snapshots) send(packet(T.ClientInput, ack));
});
sock.on('listening', () => send(packet(T.ConnectRequest, join)));
sock.bind();
