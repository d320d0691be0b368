// Polytope wire protocol: writing and reading datagrams.
//
// Reading follows one rule: untrusted bytes never assert and never throw. decodePacket checks the size,
// the file identifier, runs flatbuffers::Verifier with tight limits, then checks the header and every
// field of the message against its range (finite floats, unit quaternions, slice indices...). Anything
// wrong comes back as a DropReason that the caller counts; only a fully valid packet is handed on.
#pragma once

#include "polytope/protocol/constants.h"
#include "polytope/wire/polytope_generated.h"

#include <array>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace polytope::protocol
{

/// The generated FlatBuffers types (schema namespace polytope.wire), also reachable as protocol::wire.
namespace wire = ::polytope::wire;

/// Why a datagram was dropped. Each reason is counted separately (metrics, tests).
enum class DropReason : std::uint8_t
{
    TooShort = 0,      ///< smaller than kMinDatagramBytes (or a ConnectRequest below its padded size)
    TooLarge,          ///< larger than kMaxDatagramBytes
    BadIdentifier,     ///< not a Polytope FlatBuffer (file identifier)
    Malformed,         ///< flatbuffers::Verifier refused it (offsets, depth, table count, alignment)
    WrongProtocol,     ///< header.protocol_id is not kProtocolId
    WrongVersion,      ///< header.version is not kProtocolVersion
    TypeMismatch,      ///< header.type differs from the message's type, or no message
    InvalidField,      ///< a field out of its range: NaN/Inf, non-unit quaternion, bad slice index, long string
    UnexpectedMessage, ///< valid, but not one this peer accepts in its current state
    Count
};
inline constexpr std::size_t kDropReasonCount = static_cast<std::size_t>(DropReason::Count);

/// Stable snake_case name of a reason (logs, metrics labels).
const char* dropReasonName(DropReason reason);

/// Counts of dropped datagrams, by reason.
struct DropCounters
{
    std::array<std::uint64_t, kDropReasonCount> counts{};

    void add(DropReason reason) { ++counts[static_cast<std::size_t>(reason)]; }
    std::uint64_t operator[](DropReason reason) const { return counts[static_cast<std::size_t>(reason)]; }
    std::uint64_t total() const;
};

/// The result of decodePacket: a verified packet, or why not.
struct DecodeResult
{
    const wire::Packet* packet = nullptr; ///< points into the datagram's bytes; valid while they are
    DropReason reason = DropReason::Malformed;

    bool ok() const { return packet != nullptr; }
    wire::PacketType type() const { return packet ? packet->header()->type() : wire::PacketType::None; }
};

/// Checks a received datagram completely; see the file comment. The bytes must be 8-byte aligned.
DecodeResult decodePacket(std::span<const std::uint8_t> datagram);

/// Sequence/ack fields a sender stamps on each packet.
struct HeaderFields
{
    std::uint16_t sequence = 0;
    std::uint16_t ack = 0;
    std::uint32_t ackBits = 0;
};

/// A body as carried in a snapshot: plain data, independent of the physics engine.
struct SnapshotBody
{
    std::uint32_t id = 0;
    std::uint32_t generation = 0;
    wire::ShapeKind shape = wire::ShapeKind::Sphere;
    bool atRest = false;
    std::array<float, 3> position{};
    std::array<float, 4> orientation{0.0f, 0.0f, 0.0f, 1.0f}; ///< x, y, z, w
    std::array<float, 3> extent{};
};

/// Bytes of a snapshot datagram besides its bodies (root, identifier, tables, vtables, header, vector
/// length, alignment), with room to spare; a test checks that a full slice stays within kMaxDatagramBytes.
inline constexpr std::size_t kSnapshotOverheadBytes = 200;
/// How many bodies fit in one snapshot slice while the datagram stays within kMaxDatagramBytes.
inline constexpr std::size_t kBodiesPerSnapshotSlice =
    (kMaxDatagramBytes - kSnapshotOverheadBytes) / sizeof(wire::BodyState);

/// Writes packets into one reused FlatBufferBuilder. Each call returns a view of the finished datagram,
/// valid until the next call on the same writer. No allocation once the builder has grown to size.
class PacketWriter
{
public:
    PacketWriter();

    std::span<const std::uint8_t> connectRequest(const HeaderFields& header, std::string_view clientName);
    std::span<const std::uint8_t> connectAccepted(const HeaderFields& header, std::uint32_t clientId,
                                                  std::uint16_t tickRateHz, std::uint16_t snapshotRateHz,
                                                  std::string_view scene);
    std::span<const std::uint8_t> connectDenied(const HeaderFields& header, wire::DenyReason reason);
    /// One slice of a snapshot: bodies.size() must be at most kBodiesPerSnapshotSlice.
    std::span<const std::uint8_t> snapshotSlice(const HeaderFields& header, std::uint64_t tick, double serverTime,
                                                std::uint16_t sliceIndex, std::uint16_t sliceCount,
                                                std::uint32_t bodyCount, std::span<const SnapshotBody> bodies);
    std::span<const std::uint8_t> keepAlive(const HeaderFields& header, double time);
    std::span<const std::uint8_t> disconnect(const HeaderFields& header, wire::DisconnectReason reason);

private:
    std::span<const std::uint8_t> finish(const HeaderFields& header, wire::PacketType type,
                                         flatbuffers::Offset<void> message);

    flatbuffers::FlatBufferBuilder m_builder;
    std::vector<wire::BodyState> m_bodyStaging;
};

/// Sequence numbers and acknowledgements of one direction of a connection (16-bit, wrapping), as in
/// Fiedler's "Reliability and Congestion Avoidance over UDP": every packet carries the newest sequence
/// received and a 32-bit mask of the 32 before it.
class AckTracker
{
public:
    /// Sequence for the next outgoing packet, and the ack fields to send with it.
    HeaderFields nextOutgoing();
    /// Records a received sequence; returns false for a duplicate or one too old to track.
    bool onReceived(std::uint16_t sequence);

    std::uint16_t newestReceived() const { return m_newestReceived; }

private:
    std::uint16_t m_nextSequence = 0;
    std::uint16_t m_newestReceived = 0;
    std::uint32_t m_receivedBits = 0; ///< bit i: newestReceived - 1 - i was received
    bool m_anyReceived = false;
};

/// True when 16-bit sequence a is newer than b, across wrap-around.
constexpr bool sequenceGreaterThan(std::uint16_t a, std::uint16_t b)
{
    return ((a > b) && (a - b <= 32768)) || ((a < b) && (b - a > 32768));
}

} // namespace polytope::protocol
