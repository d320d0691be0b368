// Polytope wire protocol: writing and reading datagrams.
//
// Reading follows one rule: untrusted bytes never assert and never throw. decodePacket checks the size,
// the file identifier, runs flatbuffers::Verifier with tight limits, then checks the header and every
// field of the message against its range (finite floats, cookie and payload sizes, catalogue extents,
// input vectors...). Anything wrong comes back as a DropReason that the caller counts; only a fully valid
// packet is handed on. The snapshot payload inside a valid Snapshot is still untrusted: it has its own
// bounds-checked decoder (snapshot_codec.h).
#pragma once

#include "polytope/protocol/admin_auth.h"
#include "polytope/protocol/constants.h"
#include "polytope/protocol/quantize.h"
#include "polytope/protocol/sequence_window.h"
#include "polytope/protocol/structured_snapshot.h"
#include "polytope/wire/polytope_generated.h"

#include <array>
#include <cstdint>
#include <span>
#include <string>
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
    WrongVersion,      ///< header.version is not kProtocolVersion (a ConnectRequest of another version is
                       ///< answered with ConnectDenied(Version) all the same: DecodeResult::otherVersion)
    TypeMismatch,      ///< header.type differs from the message's type, or no message
    InvalidField,      ///< a field out of its range: NaN/Inf, bad sizes, bad enum, long string, ...
    UnexpectedMessage, ///< valid, but not one this peer accepts in its current state
    BadCookie,         ///< a ChallengeResponse whose cookie is forged, for another address, or expired
    BadPayload,        ///< a Snapshot whose delta payload does not decode (snapshot_codec.h's CodecError)
    // Version 4: tokens, sealed sessions and connection limits (STANDARD.md §11). Counted by the Server.
    NoToken,      ///< a connect without a token, and the server is not --insecure
    BadToken,     ///< the token does not open with the server's key: forged, tampered or malformed
    TokenExpired, ///< the token's expire time has passed
    TokenReused,  ///< the token already opened a session (or is being used from another address)
    TokenRefused, ///< valid, but not for this server's address or for the room asked for
    Unsealed,     ///< a plain datagram from an address whose session is sealed
    BadSeal,      ///< a sealed datagram that does not authenticate (forged, tampered, wrong key, no session)
    Replayed,     ///< a sealed datagram whose sequence was already received or is too old
    RateLimited,  ///< over the connection-attempt limits (per address or overall)
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
    std::span<const std::uint8_t> bytes; ///< the datagram decodePacket was given
    /// With reason WrongVersion: the version the datagram carries, and whether it is a ConnectRequest that
    /// deserves a ConnectDenied (Version) in that version: a Packet of this schema but for its version
    /// whose header type and message are ConnectRequest, of at least kMinConnectRequestBytes (so that the
    /// denial, much smaller, amplifies nothing). STANDARD.md section 9.
    std::uint16_t otherVersion = 0;
    bool connectRequestOfOtherVersion = false;

    bool ok() const { return packet != nullptr; }
    wire::PacketType type() const { return packet ? packet->header()->type() : wire::PacketType::None; }
};

/// Checks a received datagram completely; see the file comment. The bytes must be 8-byte aligned.
DecodeResult decodePacket(std::span<const std::uint8_t> datagram);
/// What decodePacket said of a datagram, for an 8-byte-aligned copy of its bytes: the packet found again in
/// the copy without checking it twice (`ok` and `reason` are decodePacket's verdict on the original). The
/// server's network thread decodes; the room's thread takes the copy.
DecodeResult decodedCopy(std::span<const std::uint8_t> copy, bool ok, DropReason reason);

/// PacketHeader.flags bit: ack and ack_bits are meaningful (the sender has received at least one packet).
inline constexpr std::uint8_t kHeaderFlagAckValid = 1u;
/// PacketHeader.flags bit (version 5), in ClientInput and KeepAlive only: the client decoded a snapshot slice
/// whose checksum did not match and asks for its next snapshot to be a full one (STANDARD.md 6.4). Set on
/// every such datagram until a full slice arrives; the server honours it at most once per full-snapshot
/// interval.
inline constexpr std::uint8_t kHeaderFlagFullSnapshotRequest = 2u;

/// Sequence/ack fields a sender stamps on each packet.
struct HeaderFields
{
    std::uint16_t sequence = 0;
    std::uint16_t ack = 0;
    std::uint32_t ackBits = 0;
    std::uint8_t flags = 0; ///< kHeaderFlag* bits
};

/// What ConnectAccepted announces: the session and everything the snapshot decoder must agree on.
struct SessionParameters
{
    std::uint32_t clientId = 0;              ///< >= 1
    std::uint16_t tickRateHz = 60;           ///< > 0
    std::uint16_t snapshotRateHz = 20;       ///< 1 .. tickRateHz
    std::string scene;                       ///< at most kMaxSceneNameBytes
    PositionQuantization position;           ///< world bounds and steps per metre
    std::uint32_t maxBaselineAgeTicks = 256; ///< 1 .. 65536
    std::uint64_t firstTick = 0;             ///< the server's tick when the session opened
    std::string room;                        ///< the room joined, at most kMaxRoomNameBytes
    /// How snapshots come (STANDARD.md section 14): the format the client asked for, and for Structured
    /// whether bodies carry velocities.
    wire::SnapshotFormat snapshotFormat = wire::SnapshotFormat::Compressed;
    bool snapshotVelocities = false;
};

/// What a client asks for in its ChallengeResponse besides the cookie and its credential.
struct JoinRequest
{
    std::string_view clientName;
    std::string_view room;            ///< empty: the server's first room
    std::uint16_t snapshotRateHz = 0; ///< 0: the room's rate
    bool spectator = false;
    wire::SnapshotFormat snapshotFormat = wire::SnapshotFormat::Compressed;
    bool snapshotVelocities = false; ///< Structured only
};

/// A connect token's credential as ConnectRequest and ChallengeResponse carry it (token.h makes and opens
/// it).
struct TokenCredentialFields
{
    std::uint64_t expireTime = 0; ///< Unix seconds
    std::array<std::uint8_t, kTokenCredentialNonceBytes> nonce{};
    std::vector<std::uint8_t> sealed; ///< 17 .. kMaxTokenCredentialSealedBytes
};

/// Reads a (verified) message's token into `out`; false when it carries none.
bool readTokenCredential(const wire::TokenCredential* token, TokenCredentialFields& out);

/// Reads a (verified) ConnectAccepted.
SessionParameters readSessionParameters(const wire::ConnectAccepted& message);

/// Reads a (verified, so range-checked) StructuredSnapshot into `out`.
void readStructuredSnapshot(const wire::StructuredSnapshot& message, StructuredSlice& out);

/// A body's shape as the catalogue carries it: plain data, independent of the physics engine.
struct CatalogueEntry
{
    std::uint32_t id = 0;
    std::uint32_t generation = 1; ///< never 0
    wire::ShapeKind shape = wire::ShapeKind::Sphere;
    bool removed = false;          ///< the body is gone
    bool owned = false;            ///< the receiving client owns it (kCatalogueFlagOwned)
    std::array<float, 3> extent{}; ///< metres, see the schema
    std::uint64_t geometry =
        0; ///< content hash of its hull, mesh, heightfield or compound (geometry.h); 0: none

    bool operator==(const CatalogueEntry&) const = default;
};

/// Stable lower-case name of a shape kind ("sphere", "capsule", "box", "hull", "plane"; logs, tools, JSON).
const char* shapeKindName(wire::ShapeKind kind);

/// Reads a (verified) Catalogue's entries into `out` (cleared first).
void readCatalogue(const wire::Catalogue& message, std::vector<CatalogueEntry>& out);

/// One input for one body at one tick (see the schema's InputKind for units).
struct InputCommand
{
    std::uint64_t tick = 0;
    std::uint32_t sequence = 0; ///< per client, from 1; assigned by the client library
    std::uint32_t bodyId = 0;
    std::uint32_t bodyGeneration = 1;
    wire::InputKind kind = wire::InputKind::Force;
    std::array<float, 3> vector{};

    bool operator==(const InputCommand&) const = default;
};

/// Largest magnitude allowed for each component of an input of this kind.
float inputComponentLimit(wire::InputKind kind);
/// True when an input is one a server may accept: known kind, sequence not 0, every component finite and
/// within inputComponentLimit; the body's generation not 0, except for Spawn, which names no body (id and
/// generation 0); Remove's vector zero.
bool isValidInput(const InputCommand& input);

/// Reads a (verified) ClientInput's inputs into `out` (cleared first).
void readInputs(const wire::ClientInput& message, std::vector<InputCommand>& out);

/// A game message (version 6, STANDARD.md section 15) as plain data. `data` views the bytes it was read
/// from (a datagram) or the sender's buffer.
struct GameMessageFields
{
    std::uint32_t sequence = 0; ///< per client, from 1
    std::uint64_t tick = 0;     ///< the server tick it is for
    std::uint64_t viewFromTick = 0;
    std::uint64_t viewToTick = 0;
    float viewFraction = 0.0f; ///< in [0, 1]
    std::span<const std::uint8_t> data;
};
/// True when a game message is one a server may accept: sequence not 0, 1 .. kMaxGameMessageBytes bytes,
/// viewFromTick <= viewToTick, viewFraction finite in [0, 1].
bool isValidGameMessage(const GameMessageFields& message);
/// Reads a (verified) ClientInput's game messages into `out` (cleared first); their data views the datagram.
void readGameMessages(const wire::ClientInput& message, std::vector<GameMessageFields>& out);
/// The bytes a ClientInput grows by for one game message of `dataBytes` bytes, at most (for packing
/// several into one datagram within kMaxPacketBytes).
std::size_t gameMessageWireBytes(std::size_t dataBytes);

/// An admin command as plain data (see the schema's AdminCommand).
struct AdminCommandFields
{
    std::string room;
    std::uint64_t nonce = 0;
    double time = 0.0; ///< sender's Unix time, seconds
    wire::AdminOp op = wire::AdminOp::Status;
    std::uint32_t count = 0;
    float value = 0.0f;
    std::array<float, 3> vector{};
    std::string text;
};

/// Builds the AdminCommand FlatBuffer that an AdminRequest carries (and its keyed hash covers).
std::vector<std::uint8_t> encodeAdminCommand(const AdminCommandFields& command);
/// Verifies and reads an AdminCommand's bytes (any alignment); false on anything malformed or out of range.
bool decodeAdminCommand(std::span<const std::uint8_t> bytes, AdminCommandFields& out);

/// Writes packets into one reused FlatBufferBuilder. Each call returns a view of the finished datagram,
/// valid until the next call on the same writer. No allocation once the builder has grown to size.
class PacketWriter
{
  public:
    PacketWriter();

    /// Padded to kMinConnectRequestBytes. `token` may be null (a tokenless connect, for --insecure servers).
    std::span<const std::uint8_t> connectRequest(const HeaderFields& header, std::string_view clientName,
                                                 std::string_view room = {},
                                                 const TokenCredentialFields* token = nullptr);
    std::span<const std::uint8_t> challenge(const HeaderFields& header, std::span<const std::uint8_t> cookie);
    /// Padded to kMinConnectRequestBytes.
    std::span<const std::uint8_t> challengeResponse(const HeaderFields& header,
                                                    std::span<const std::uint8_t> cookie,
                                                    std::string_view clientName, std::string_view room = {},
                                                    std::uint16_t snapshotRateHz = 0, bool spectator = false,
                                                    const TokenCredentialFields* token = nullptr);
    /// Padded to kMinConnectRequestBytes; everything a client may ask for at join.
    std::span<const std::uint8_t> challengeResponse(const HeaderFields& header,
                                                    std::span<const std::uint8_t> cookie,
                                                    const JoinRequest& join,
                                                    const TokenCredentialFields* token = nullptr);
    std::span<const std::uint8_t> connectAccepted(const HeaderFields& header,
                                                  const SessionParameters& session);
    /// `version` is the header's: kProtocolVersion, or for DenyReason::Version the version the request
    /// carried, so that a client of that version can read the denial (STANDARD.md section 9).
    std::span<const std::uint8_t> connectDenied(const HeaderFields& header, wire::DenyReason reason,
                                                std::uint16_t version = kProtocolVersion);
    /// A denial with the game's reason (RefusedByGame), cut to kMaxLogicReasonBytes.
    std::span<const std::uint8_t> connectDenied(const HeaderFields& header, wire::DenyReason reason,
                                                std::string_view message);
    /// One slice: payload.size() in 1 .. kMaxSnapshotPayloadBytes.
    std::span<const std::uint8_t> snapshot(const HeaderFields& header, std::uint64_t tick, double serverTime,
                                           std::span<const std::uint8_t> payload);
    /// One structured slice (STANDARD.md section 14), as StructuredSnapshotEncoder cut it: within
    /// kMaxPacketBytes.
    std::span<const std::uint8_t> structuredSnapshot(const HeaderFields& header,
                                                     const StructuredSliceView& slice);
    /// entries.size() in 1 .. kMaxCatalogueEntriesPerDatagram, or 1 .. kMaxCatalogueEntriesWithGeometry when
    /// any entry names a geometry (then the datagram carries the hashes).
    std::span<const std::uint8_t> catalogue(const HeaderFields& header,
                                            std::span<const CatalogueEntry> entries);
    /// One slice of a geometry: `data` is the slice at `offset` of a geometry of `totalBytes` (geometry.h).
    std::span<const std::uint8_t> geometrySlice(const HeaderFields& header, std::uint64_t hash,
                                                wire::ShapeKind kind, std::uint32_t totalBytes,
                                                std::uint32_t offset, std::span<const std::uint8_t> data);
    /// inputs.size() at most kMaxInputsPerDatagram.
    std::span<const std::uint8_t> clientInput(const HeaderFields& header,
                                              std::span<const InputCommand> inputs);
    /// With game messages too: messages.size() at most kMaxGameMessagesPerDatagram.
    std::span<const std::uint8_t> clientInput(const HeaderFields& header,
                                              std::span<const InputCommand> inputs,
                                              std::span<const GameMessageFields> messages);
    /// One game state (version 6): data.size() at most kMaxGameStateBytes, version >= 1.
    std::span<const std::uint8_t> gameState(const HeaderFields& header, wire::GameStateScope scope,
                                            std::uint32_t version, std::span<const std::uint8_t> data);
    std::span<const std::uint8_t> keepAlive(const HeaderFields& header, double time);
    std::span<const std::uint8_t> disconnect(const HeaderFields& header, wire::DisconnectReason reason,
                                             std::string_view message = {});
    /// `command` from encodeAdminCommand, `mac` kAdminMacBytes; padded to kMinAdminRequestBytes.
    std::span<const std::uint8_t> adminRequest(const HeaderFields& header,
                                               std::span<const std::uint8_t> command,
                                               std::span<const std::uint8_t> mac);
    /// `message` is cut to kMaxAdminMessageBytes; signed with `key` (admin_auth.h) when given.
    std::span<const std::uint8_t> adminReply(const HeaderFields& header, std::uint64_t nonce, bool ok,
                                             std::string_view message, const AdminMacKey* key);

  private:
    std::span<const std::uint8_t> finish(const HeaderFields& header, wire::PacketType type,
                                         flatbuffers::Offset<void> message,
                                         std::uint16_t version = kProtocolVersion);
    std::span<const std::uint8_t> padded(const HeaderFields& header, std::span<const std::uint8_t> cookie,
                                         const JoinRequest& join, bool isResponse,
                                         const TokenCredentialFields* token);

    flatbuffers::FlatBufferBuilder m_builder;
    std::vector<wire::CatalogueEntry> m_catalogueStaging;
    std::vector<wire::Input> m_inputStaging;
    std::vector<std::uint64_t> m_geometryStaging;
    std::vector<wire::StructuredBody> m_bodyStaging;
    std::vector<wire::StructuredVelocity> m_velocityStaging;
    std::vector<flatbuffers::Offset<wire::GameMessage>> m_messageStaging;
};

/// True when 16-bit sequence a is newer than b, across wrap-around.
constexpr bool sequenceGreaterThan(std::uint16_t a, std::uint16_t b)
{
    return ((a > b) && (a - b <= 32768)) || ((a < b) && (b - a > 32768));
}

/// Sequence numbers and acknowledgements of one direction of a connection (16-bit, wrapping), as in
/// Fiedler's "Reliability and Congestion Avoidance over UDP": every packet carries the newest sequence
/// received and a 32-bit mask of the 32 before it. Received sequences are unwrapped to 64 bits and kept in a
/// SequenceWindow of 33 (the newest and the 32 before it).
class AckTracker
{
  public:
    /// Sequence for the next outgoing packet, and the ack fields to send with it.
    HeaderFields nextOutgoing();
    /// Records a received sequence; returns false for a duplicate or one too old to track.
    bool onReceived(std::uint16_t sequence);
    /// True when `sequence` was recorded (the newest or one of the 32 before it).
    bool hasReceived(std::uint16_t sequence) const;
    /// The sequence the next outgoing packet will carry.
    std::uint16_t nextSequence() const { return m_nextSequence; }

  private:
    /// The 64-bit sequence a received 16-bit one stands for, nearest the newest received.
    std::uint64_t unwrap(std::uint16_t sequence) const;

    std::uint16_t m_nextSequence = 0;
    SequenceWindow<33> m_received;
};

/// Calls fn(sequence) for every sequence a received header acknowledges (ack and the set bits of ack_bits),
/// nothing when the header says its acks are not valid yet.
template <class Fn> void forEachAcked(const wire::PacketHeader& header, Fn&& fn)
{
    if ((header.flags() & kHeaderFlagAckValid) == 0)
    {
        return;
    }
    fn(header.ack());
    const std::uint32_t bits = header.ack_bits();
    for (std::uint32_t i = 0; i < 32; ++i)
    {
        if ((bits >> i) & 1u)
        {
            fn(static_cast<std::uint16_t>(header.ack() - 1 - i));
        }
    }
}

} // namespace polytope::protocol
