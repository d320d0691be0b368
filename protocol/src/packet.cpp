#include "polytope/protocol/packet.h"

#include <algorithm>
#include <cmath>

namespace polytope::protocol
{
namespace
{

// Tight verifier limits: a Packet is one table with one message table inside it, and vectors of structs.
constexpr flatbuffers::uoffset_t kMaxVerifierDepth = 8;
constexpr flatbuffers::uoffset_t kMaxVerifierTables = 16;

bool finite(const wire::Vec3f& v) { return std::isfinite(v.x()) && std::isfinite(v.y()) && std::isfinite(v.z()); }

bool unitQuaternion(const wire::Quatf& q)
{
    const float x = q.x(), y = q.y(), z = q.z(), w = q.w();
    if (!std::isfinite(x) || !std::isfinite(y) || !std::isfinite(z) || !std::isfinite(w))
    {
        return false;
    }
    return std::fabs(x * x + y * y + z * z + w * w - 1.0f) < 1e-3f;
}

bool validShapeKind(wire::ShapeKind kind)
{
    return static_cast<std::uint8_t>(kind) <= static_cast<std::uint8_t>(wire::ShapeKind::MAX);
}

bool validSnapshot(const wire::Snapshot& s)
{
    if (s.slice_count() == 0 || s.slice_index() >= s.slice_count() || !std::isfinite(s.server_time()) ||
        s.server_time() < 0.0)
    {
        return false;
    }
    const auto* bodies = s.bodies();
    const std::uint32_t count = bodies ? bodies->size() : 0;
    if (count > kBodiesPerSnapshotSlice || count > s.body_count() ||
        s.body_count() > static_cast<std::uint64_t>(s.slice_count()) * kBodiesPerSnapshotSlice)
    {
        return false;
    }
    for (std::uint32_t i = 0; i < count; ++i)
    {
        const wire::BodyState* b = bodies->Get(i);
        if (b->generation() == 0 || !validShapeKind(b->shape()) || !finite(b->position()) ||
            !unitQuaternion(b->orientation()) || !finite(b->extent()))
        {
            return false;
        }
    }
    return true;
}

/// Range checks for each message kind, after the Verifier has vouched for the structure.
bool validMessage(const wire::Packet& packet, std::size_t datagramBytes, DropReason& reason)
{
    reason = DropReason::InvalidField;
    switch (packet.message_type())
    {
    case wire::Message::ConnectRequest:
    {
        if (datagramBytes < kMinConnectRequestBytes)
        {
            reason = DropReason::TooShort;
            return false;
        }
        const auto* name = packet.message_as_ConnectRequest()->client_name();
        return !name || name->size() <= kMaxClientNameBytes;
    }
    case wire::Message::ConnectAccepted:
    {
        const auto* m = packet.message_as_ConnectAccepted();
        const auto* scene = m->scene();
        return m->tick_rate_hz() > 0 && m->snapshot_rate_hz() > 0 && (!scene || scene->size() <= kMaxSceneNameBytes);
    }
    case wire::Message::ConnectDenied:
    {
        const auto r = packet.message_as_ConnectDenied()->reason();
        return static_cast<std::uint8_t>(r) <= static_cast<std::uint8_t>(wire::DenyReason::MAX);
    }
    case wire::Message::Snapshot:
        return validSnapshot(*packet.message_as_Snapshot());
    case wire::Message::KeepAlive:
        return std::isfinite(packet.message_as_KeepAlive()->time());
    case wire::Message::Disconnect:
    {
        const auto r = packet.message_as_Disconnect()->reason();
        return static_cast<std::uint8_t>(r) <= static_cast<std::uint8_t>(wire::DisconnectReason::MAX);
    }
    case wire::Message::NONE:
        break;
    }
    reason = DropReason::TypeMismatch;
    return false;
}

} // namespace

const char* dropReasonName(DropReason reason)
{
    switch (reason)
    {
    case DropReason::TooShort:
        return "too_short";
    case DropReason::TooLarge:
        return "too_large";
    case DropReason::BadIdentifier:
        return "bad_identifier";
    case DropReason::Malformed:
        return "malformed";
    case DropReason::WrongProtocol:
        return "wrong_protocol";
    case DropReason::WrongVersion:
        return "wrong_version";
    case DropReason::TypeMismatch:
        return "type_mismatch";
    case DropReason::InvalidField:
        return "invalid_field";
    case DropReason::UnexpectedMessage:
        return "unexpected_message";
    case DropReason::Count:
        break;
    }
    return "unknown";
}

std::uint64_t DropCounters::total() const
{
    std::uint64_t sum = 0;
    for (std::uint64_t c : counts)
    {
        sum += c;
    }
    return sum;
}

DecodeResult decodePacket(std::span<const std::uint8_t> datagram)
{
    DecodeResult result;
    if (datagram.size() < kMinDatagramBytes)
    {
        result.reason = DropReason::TooShort;
        return result;
    }
    if (datagram.size() > kMaxDatagramBytes)
    {
        result.reason = DropReason::TooLarge;
        return result;
    }
    if (!wire::PacketBufferHasIdentifier(datagram.data()))
    {
        result.reason = DropReason::BadIdentifier;
        return result;
    }
    flatbuffers::Verifier::Options options;
    options.max_depth = kMaxVerifierDepth;
    options.max_tables = kMaxVerifierTables;
    flatbuffers::Verifier verifier(datagram.data(), datagram.size(), options);
    if (!wire::VerifyPacketBuffer(verifier))
    {
        result.reason = DropReason::Malformed;
        return result;
    }
    const wire::Packet* packet = wire::GetPacket(datagram.data());
    const wire::PacketHeader* header = packet->header(); // required: the Verifier guarantees it
    if (header->protocol_id() != kProtocolId)
    {
        result.reason = DropReason::WrongProtocol;
        return result;
    }
    if (header->version() != kProtocolVersion)
    {
        result.reason = DropReason::WrongVersion;
        return result;
    }
    if (packet->message_type() == wire::Message::NONE || packet->message() == nullptr ||
        static_cast<std::uint8_t>(header->type()) != static_cast<std::uint8_t>(packet->message_type()))
    {
        result.reason = DropReason::TypeMismatch;
        return result;
    }
    if (!validMessage(*packet, datagram.size(), result.reason))
    {
        return result;
    }
    result.packet = packet;
    return result;
}

PacketWriter::PacketWriter() : m_builder(kMaxDatagramBytes + 256) { m_bodyStaging.reserve(kBodiesPerSnapshotSlice); }

std::span<const std::uint8_t> PacketWriter::finish(const HeaderFields& fields, wire::PacketType type,
                                                   flatbuffers::Offset<void> message)
{
    const wire::PacketHeader header(kProtocolId, kProtocolVersion, type, 0, fields.sequence, fields.ack,
                                    fields.ackBits);
    const auto packet = wire::CreatePacket(m_builder, &header, static_cast<wire::Message>(type), message);
    wire::FinishPacketBuffer(m_builder, packet);
    return {m_builder.GetBufferPointer(), m_builder.GetSize()};
}

std::span<const std::uint8_t> PacketWriter::connectRequest(const HeaderFields& header, std::string_view clientName)
{
    // Pad so that the finished datagram is at least kMinConnectRequestBytes. The padding vector's payload
    // is the size we still need after everything else; a first pass measures the rest.
    const std::string_view name = clientName.substr(0, kMaxClientNameBytes);
    std::size_t padding = 0;
    for (int pass = 0; pass < 2; ++pass)
    {
        m_builder.Clear();
        const auto nameOffset = m_builder.CreateString(name.data(), name.size());
        std::uint8_t* pad = nullptr;
        const auto paddingOffset = m_builder.CreateUninitializedVector<std::uint8_t>(padding, &pad);
        std::fill(pad, pad + padding, std::uint8_t{0});
        const auto message = wire::CreateConnectRequest(m_builder, nameOffset, paddingOffset);
        const auto bytes = finish(header, wire::PacketType::ConnectRequest, message.Union());
        if (bytes.size() >= kMinConnectRequestBytes)
        {
            return bytes;
        }
        padding += kMinConnectRequestBytes - bytes.size();
    }
    return {m_builder.GetBufferPointer(), m_builder.GetSize()};
}

std::span<const std::uint8_t> PacketWriter::connectAccepted(const HeaderFields& header, std::uint32_t clientId,
                                                            std::uint16_t tickRateHz, std::uint16_t snapshotRateHz,
                                                            std::string_view scene)
{
    m_builder.Clear();
    const std::string_view name = scene.substr(0, kMaxSceneNameBytes);
    const auto sceneOffset = m_builder.CreateString(name.data(), name.size());
    const auto message = wire::CreateConnectAccepted(m_builder, clientId, tickRateHz, snapshotRateHz, sceneOffset);
    return finish(header, wire::PacketType::ConnectAccepted, message.Union());
}

std::span<const std::uint8_t> PacketWriter::connectDenied(const HeaderFields& header, wire::DenyReason reason)
{
    m_builder.Clear();
    const auto message = wire::CreateConnectDenied(m_builder, reason);
    return finish(header, wire::PacketType::ConnectDenied, message.Union());
}

std::span<const std::uint8_t> PacketWriter::snapshotSlice(const HeaderFields& header, std::uint64_t tick,
                                                          double serverTime, std::uint16_t sliceIndex,
                                                          std::uint16_t sliceCount, std::uint32_t bodyCount,
                                                          std::span<const SnapshotBody> bodies)
{
    m_builder.Clear();
    // Staged in a reused array and copied with CreateVectorOfStructs: FlatBuffers 2.0.8's
    // CreateUninitializedVectorOfStructs aligns to sizeof(T) (52 here) and wastes up to 51 bytes.
    m_bodyStaging.clear();
    for (const SnapshotBody& b : bodies)
    {
        m_bodyStaging.emplace_back(b.id, b.generation, b.shape, b.atRest,
                                   wire::Vec3f(b.position[0], b.position[1], b.position[2]),
                                   wire::Quatf(b.orientation[0], b.orientation[1], b.orientation[2], b.orientation[3]),
                                   wire::Vec3f(b.extent[0], b.extent[1], b.extent[2]));
    }
    const auto vector = m_builder.CreateVectorOfStructs(m_bodyStaging.data(), m_bodyStaging.size());
    const auto message = wire::CreateSnapshot(m_builder, tick, serverTime, sliceIndex, sliceCount, bodyCount, vector);
    return finish(header, wire::PacketType::Snapshot, message.Union());
}

std::span<const std::uint8_t> PacketWriter::keepAlive(const HeaderFields& header, double time)
{
    m_builder.Clear();
    const auto message = wire::CreateKeepAlive(m_builder, time);
    return finish(header, wire::PacketType::KeepAlive, message.Union());
}

std::span<const std::uint8_t> PacketWriter::disconnect(const HeaderFields& header, wire::DisconnectReason reason)
{
    m_builder.Clear();
    const auto message = wire::CreateDisconnect(m_builder, reason);
    return finish(header, wire::PacketType::Disconnect, message.Union());
}

HeaderFields AckTracker::nextOutgoing()
{
    HeaderFields fields;
    fields.sequence = m_nextSequence++;
    fields.ack = m_newestReceived;
    fields.ackBits = m_receivedBits;
    return fields;
}

bool AckTracker::onReceived(std::uint16_t sequence)
{
    if (!m_anyReceived)
    {
        m_anyReceived = true;
        m_newestReceived = sequence;
        m_receivedBits = 0;
        return true;
    }
    if (sequence == m_newestReceived)
    {
        return false;
    }
    if (sequenceGreaterThan(sequence, m_newestReceived))
    {
        const std::uint16_t shift = static_cast<std::uint16_t>(sequence - m_newestReceived);
        // The old newest becomes bit (shift - 1); bits pushed past 32 fall off.
        if (shift > 32)
        {
            m_receivedBits = 0;
        }
        else if (shift == 32)
        {
            m_receivedBits = 1u << 31;
        }
        else
        {
            m_receivedBits = (m_receivedBits << shift) | (1u << (shift - 1));
        }
        m_newestReceived = sequence;
        return true;
    }
    const std::uint16_t age = static_cast<std::uint16_t>(m_newestReceived - sequence);
    if (age > 32)
    {
        return false;
    }
    const std::uint32_t bit = 1u << (age - 1);
    if (m_receivedBits & bit)
    {
        return false;
    }
    m_receivedBits |= bit;
    return true;
}

} // namespace polytope::protocol
