#!/usr/bin/env python3
"""Reads a Polytope world through structured snapshots (protocol/STANDARD.md section 14) with Debian's
python3-flatbuffers, code flatc generates from protocol/schema/polytope.fbs at start, and a UDP socket. Joins a
server run with --insecure, prints a few bodies of each complete tick, exits 0 after --snapshots ticks."""
import argparse, math, os, socket, struct, subprocess, sys, tempfile, time, zlib

import flatbuffers

HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, "..", "..", "protocol", "schema", "polytope.fbs")
GEN = os.path.join(tempfile.gettempdir(), "polytope-python-gen")
subprocess.run(["flatc", "--python", "-o", GEN, SCHEMA], check=True)
sys.path.insert(0, GEN)
from polytope.wire import (Challenge, ChallengeResponse, ClientInput, ConnectAccepted, ConnectRequest,  # noqa
                           Packet, PacketHeader, PacketType, SnapshotFormat, StructuredSnapshot, Vec3f)

PROTOCOL_ID, VERSION, ACK_VALID, ID_SPACE = 0x50544C50, 6, 1, 1 << 32
RECORD = struct.Struct("<IIIIIHHHB?")  # the 28-byte body record the slice checksum covers


class Acks:
    """The sequences we sent and the server's we recorded (STANDARD.md 2.1)."""

    def __init__(self):
        self.next, self.newest, self.seen = 0, None, set()

    def record(self, seq):
        if self.newest is None or 0 < (seq - self.newest) % 65536 < 32768:
            self.newest = seq
        self.seen = {s for s in self.seen | {seq} if (self.newest - s) % 65536 <= 32}

    def header(self, builder, ptype):
        seq, self.next = self.next, (self.next + 1) % 65536
        if self.newest is None:
            return PacketHeader.CreatePacketHeader(builder, PROTOCOL_ID, VERSION, ptype, 0, seq, 0, 0)
        bits = sum(1 << i for i in range(32) if (self.newest - 1 - i) % 65536 in self.seen)
        return PacketHeader.CreatePacketHeader(builder, PROTOCOL_ID, VERSION, ptype, ACK_VALID, seq, self.newest, bits)


def packet(acks, ptype, build):
    b = flatbuffers.Builder(1024)
    message = build(b)
    Packet.Start(b), Packet.AddHeader(b, acks.header(b, ptype))
    Packet.AddMessageType(b, ptype), Packet.AddMessage(b, message)
    b.Finish(Packet.End(b), file_identifier=b"PLTP")
    return bytes(b.Output())


def join_message(b, cookie, velocities):
    padding = b.CreateByteVector(bytes(512))  # requests are padded to at least 512 bytes
    name = b.CreateString("python-reader")
    if cookie is None:
        ConnectRequest.Start(b), ConnectRequest.AddClientName(b, name), ConnectRequest.AddPadding(b, padding)
        return ConnectRequest.End(b)
    cookie = b.CreateByteVector(cookie)
    ChallengeResponse.Start(b), ChallengeResponse.AddCookie(b, cookie), ChallengeResponse.AddClientName(b, name)
    ChallengeResponse.AddPadding(b, padding), ChallengeResponse.AddSpectator(b, True)
    ChallengeResponse.AddSnapshotFormat(b, SnapshotFormat.SnapshotFormat.Structured)
    ChallengeResponse.AddSnapshotVelocities(b, velocities)
    return ChallengeResponse.End(b)


def orientation(largest, codes):
    """Smallest three: each code is k + 2047 for the component k / (sqrt(2) 2047); the dropped one is >= 0."""
    rest = [(c - 2047) / (math.sqrt(2) * 2047) for c in codes]
    rest.insert(largest, math.sqrt(max(0.0, 1.0 - sum(v * v for v in rest))))
    return rest


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1"), ap.add_argument("--port", type=int, default=40000)
    ap.add_argument("--snapshots", type=int, default=20), ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--velocities", action="store_true"), ap.add_argument("--bodies", type=int, default=3)
    args = ap.parse_args()
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.settimeout(0.1)
    server, acks, deadline = (args.host, args.port), Acks(), time.time() + args.timeout
    cookie, accepted, complete, partial, velocity, shown = None, None, {}, {}, {}, 0
    while shown < args.snapshots:
        if time.time() > deadline:
            return print("timed out", file=sys.stderr) or 1
        if accepted is None:  # (re)send the handshake until ConnectAccepted
            ptype = PacketType.PacketType.ChallengeResponse if cookie else PacketType.PacketType.ConnectRequest
            sock.sendto(packet(acks, ptype, lambda b: join_message(b, cookie, args.velocities)), server)
        try:
            data = sock.recv(2048)
        except socket.timeout:
            continue
        p = Packet.Packet.GetRootAs(data, 0) if len(data) >= 32 and data[4:8] == b"PLTP" else None
        if p is None:
            continue
        kind, table, seq = p.MessageType(), p.Message(), p.Header().Sequence()
        if kind == PacketType.PacketType.Challenge and cookie is None:
            c = Challenge.Challenge()
            c.Init(table.Bytes, table.Pos)
            cookie = bytes(c.Cookie(i) for i in range(c.CookieLength()))
        elif kind == PacketType.PacketType.ConnectAccepted and accepted is None:
            accepted = ConnectAccepted.ConnectAccepted()
            accepted.Init(table.Bytes, table.Pos)
            lo, step = accepted.BoundsMin(), 1.0 / accepted.StepsPerMetre()  # codes to metres (14.4)
            origin = (lo.X(), lo.Y(), lo.Z())
            print(f"connected: scene {accepted.Scene().decode()}, {accepted.SnapshotRateHz()} Hz, "
                  f"1/{accepted.StepsPerMetre()} m steps")
            acks.record(seq)
        elif kind == PacketType.PacketType.StructuredSnapshot and accepted is not None:
            s = StructuredSnapshot.StructuredSnapshot()
            s.Init(table.Bytes, table.Pos)
            tick, first, end = s.Tick(), s.FirstId(), s.EndId()
            if tick in complete or (first, end) in partial.get(tick, {}).get("ranges", set()):
                acks.record(seq)  # a duplicate: we have it
            elif not s.HasBaseline() or s.BaselineTick() in complete:
                base = complete[s.BaselineTick()] if s.HasBaseline() else {}
                bodies = {i: r for i, r in base.items() if first <= i < end}
                for k in range(s.RemovedLength()):
                    bodies.pop(s.Removed(k), None)
                for k in range(s.BodiesLength()):
                    b = s.Bodies(k)
                    bodies[b.Id()] = (b.Id(), b.Generation(), b.PositionX(), b.PositionY(), b.PositionZ(),
                                      b.OrientationA(), b.OrientationB(), b.OrientationC(), b.Largest(), b.AtRest())
                    if s.VelocitiesLength():
                        v = s.Velocities(k).Linear(Vec3f.Vec3f())
                        velocity[b.Id()] = (v.X(), v.Y(), v.Z())
                if zlib.crc32(b"".join(RECORD.pack(*bodies[i]) for i in sorted(bodies))) == s.Checksum():
                    acks.record(seq)  # applied, and equal to the server's state: acknowledge it
                    part = partial.setdefault(tick, {"ranges": set(), "covered": 0, "bodies": {}})
                    part["ranges"].add((first, end)), part["bodies"].update(bodies)
                    part["covered"] += end - first
                    if part["covered"] == ID_SPACE:
                        complete[tick] = partial.pop(tick)["bodies"]
                        for old in [t for t in complete if t + accepted.MaxBaselineAgeTicks() < tick]:
                            del complete[old]
                        shown += 1
                        print(f"tick {tick}: {len(complete[tick])} bodies")
                        for r in sorted(complete[tick].values())[: args.bodies]:
                            pos = [origin[a] + r[2 + a] * step for a in range(3)]
                            q = orientation(r[8], r[5:8])
                            extra = f" v {velocity.get(r[0], (0, 0, 0))[1]:+.2f}" if args.velocities else ""
                            print(f"  body {r[0]} gen {r[1]} pos {pos[0]:.3f} {pos[1]:.3f} {pos[2]:.3f} "
                                  f"quat {q[0]:.4f} {q[1]:.4f} {q[2]:.4f} {q[3]:.4f} rest {int(r[9])}{extra}")
        elif kind in (PacketType.PacketType.Catalogue, PacketType.PacketType.KeepAlive):
            acks.record(seq)
        if accepted is not None:  # an empty ClientInput: its header carries our acknowledgements
            ack = packet(acks, PacketType.PacketType.ClientInput, lambda b: (ClientInput.Start(b), ClientInput.End(b))[1])
            sock.sendto(ack, server)
    return 0


sys.exit(main())
