#include "polytope/protocol/packet.h"

#include "polytope/protocol/geometry.h"

#include <algorithm>
#include <cmath>

namespace polytope::protocol
{
namespace
{

// Tight verifier limits: a Packet is one table with one message table inside it, and vectors of structs.
constexpr flatbuffers::uoffset_t kMaxVerifierDepth = 8;
constexpr flatbuffers::uoffset_t kMaxVerifierTables = 16;
/// File identifier of an AdminCommand buffer (it is not a Packet).
constexpr const char* kAdminCommandIdentifier = "PLTA";

bool finite(const wire::Vec3f& v)
{
    return std::isfinite(v.x()) && std::isfinite(v.y()) && std::isfinite(v.z());
}

template <class Enum> bool validEnum(Enum value)
{
    return static_cast<std::uint8_t>(value) <= static_cast<std::uint8_t>(Enum::MAX);
}

bool validName(const flatbuffers::String* name)
{
    return !name || name->size() <= kMaxClientNameBytes;
}

bool validRoom(const flatbuffers::String* room)
{
    return !room || room->size() <= kMaxRoomNameBytes;
}

bool validCookie(const flatbuffers::Vector<std::uint8_t>* cookie)
{
    return cookie != nullptr && cookie->size() == kCookieBytes;
}

/// Absent is valid here (the Host decides whether a token is required); present means every field in range.
bool validToken(const wire::TokenCredential* token)
{
    if (token == nullptr)
    {
        return true;
    }
    const auto* nonce = token->nonce();
    const auto* sealed = token->sealed();
    return nonce != nullptr && nonce->size() == kTokenCredentialNonceBytes && sealed != nullptr &&
           sealed->size() > 16 && sealed->size() <= kMaxTokenCredentialSealedBytes;
}

bool validConnectAccepted(const wire::ConnectAccepted& m)
{
    const auto* scene = m.scene();
    if (!validRoom(m.room()))
    {
        return false;
    }
    if (m.client_id() == 0 || m.tick_rate_hz() == 0 || m.snapshot_rate_hz() == 0 ||
        m.snapshot_rate_hz() > m.tick_rate_hz() || (scene && scene->size() > kMaxSceneNameBytes) ||
        m.bounds_min() == nullptr || m.bounds_max() == nullptr || m.max_baseline_age_ticks() == 0 ||
        m.max_baseline_age_ticks() > 65536)
    {
        return false;
    }
    return readSessionParameters(m).position.isValid();
}

bool validCatalogue(const wire::Catalogue& m)
{
    const auto* entries = m.entries();
    if (!entries || entries->size() == 0 || entries->size() > kMaxCatalogueEntriesPerDatagram)
    {
        return false;
    }
    // The hashes are uint64: their vector must be 8-byte aligned to be read (see validClientInput).
    if (const auto* geometry = m.geometry();
        geometry &&
        (geometry->size() != entries->size() || entries->size() > kMaxCatalogueEntriesWithGeometry ||
         reinterpret_cast<std::uintptr_t>(geometry->Data()) % alignof(std::uint64_t) != 0))
    {
        return false;
    }
    for (const wire::CatalogueEntry* e : *entries)
    {
        if (e->generation() == 0 || !validEnum(e->shape()) || (e->flags() & ~kCatalogueFlagOwned) != 0 ||
            !finite(e->extent()))
        {
            return false;
        }
        for (const float v : {e->extent().x(), e->extent().y(), e->extent().z()})
        {
            if (!(v >= 0.0f && v <= kMaxShapeExtentMeters))
            {
                return false;
            }
        }
    }
    return true;
}

bool validGeometrySlice(const wire::GeometrySlice& m)
{
    const std::size_t total = m.total_bytes();
    const std::size_t offset = m.offset();
    if (m.hash() == 0 || !isGeometryKind(m.kind()) || total == 0 || total > kMaxGeometryBytes ||
        offset % kGeometrySliceBytes != 0 || offset >= total || !m.data())
    {
        return false;
    }
    return m.data()->size() == std::min(kGeometrySliceBytes, total - offset);
}

bool validClientInput(const wire::ClientInput& m, DropReason& reason)
{
    const auto* inputs = m.inputs();
    if (!inputs)
    {
        return true; // an empty input datagram is a plain acknowledgement
    }
    if (inputs->size() > kMaxInputsPerDatagram)
    {
        return false;
    }
    // The Verifier checks a vector's length field (4-byte aligned) but not that its structs are aligned to
    // their own 8 bytes; reading a misaligned uint64 is undefined behaviour, so refuse such a buffer here.
    // An empty vector has no struct to read: FlatBuffers' C++ builder does not align one (PreAlign returns
    // early for zero bytes), and it means the same as an absent vector.
    if (inputs->size() != 0 && reinterpret_cast<std::uintptr_t>(inputs->Data()) % alignof(wire::Input) != 0)
    {
        reason = DropReason::Malformed;
        return false;
    }
    for (const wire::Input* in : *inputs)
    {
        InputCommand command;
        command.tick = in->tick();
        command.sequence = in->sequence();
        command.bodyId = in->body_id();
        command.bodyGeneration = in->body_generation();
        command.kind = in->kind();
        command.vector = {in->vector().x(), in->vector().y(), in->vector().z()};
        if (!isValidInput(command))
        {
            return false;
        }
    }
    return true;
}

GameMessageFields readGameMessage(const wire::GameMessage& m)
{
    GameMessageFields fields;
    fields.sequence = m.sequence();
    fields.tick = m.tick();
    fields.viewFromTick = m.view_from_tick();
    fields.viewToTick = m.view_to_tick();
    fields.viewFraction = m.view_fraction();
    if (const auto* data = m.data())
    {
        fields.data = {data->Data(), data->size()};
    }
    return fields;
}

bool validGameMessages(const wire::ClientInput& m)
{
    const auto* messages = m.messages();
    if (!messages)
    {
        return true;
    }
    if (messages->size() > kMaxGameMessagesPerDatagram)
    {
        return false;
    }
    return std::all_of(messages->begin(), messages->end(),
                       [](const wire::GameMessage* message)
                       { return isValidGameMessage(readGameMessage(*message)); });
}

bool validGameState(const wire::GameState& m)
{
    return validEnum(m.scope()) && m.version() != 0 && (!m.data() || m.data()->size() <= kMaxGameStateBytes);
}

bool validReason(const flatbuffers::String* message)
{
    return !message || message->size() <= kMaxLogicReasonBytes;
}

/// The join options of a ChallengeResponse or ConnectAccepted: a known format, velocities with Structured
/// only.
bool validSnapshotFormat(wire::SnapshotFormat format, bool velocities)
{
    return validEnum(format) && (format == wire::SnapshotFormat::Structured || !velocities);
}

bool validStructuredSnapshot(const wire::StructuredSnapshot& m)
{
    if (!std::isfinite(m.server_time()) || m.server_time() < 0.0 || m.end_id() > kIdSpaceEnd ||
        m.first_id() >= m.end_id() || (m.has_baseline() && m.baseline_tick() >= m.tick()))
    {
        return false;
    }
    const auto inRange = [&](std::uint32_t id) { return id >= m.first_id() && id < m.end_id(); };
    const auto* bodies = m.bodies();
    const std::size_t bodyCount = bodies ? bodies->size() : 0;
    for (std::size_t i = 0; i < bodyCount; ++i)
    {
        const wire::StructuredBody* b = bodies->Get(static_cast<flatbuffers::uoffset_t>(i));
        const QuantizedOrientation orientation{b->largest(),
                                               {b->orientation_a(), b->orientation_b(), b->orientation_c()}};
        if (!inRange(b->id()) ||
            (i > 0 && b->id() <= bodies->Get(static_cast<flatbuffers::uoffset_t>(i - 1))->id()) ||
            b->generation() == 0 || !isValidOrientation(orientation))
        {
            return false;
        }
    }
    if (const auto* removed = m.removed())
    {
        for (std::size_t i = 0; i < removed->size(); ++i)
        {
            const auto at = static_cast<flatbuffers::uoffset_t>(i);
            if (!inRange(removed->Get(at)) || (i > 0 && removed->Get(at) <= removed->Get(at - 1)))
            {
                return false;
            }
        }
    }
    if (const auto* velocities = m.velocities())
    {
        if (velocities->size() != bodyCount)
        {
            return false;
        }
        for (const wire::StructuredVelocity* v : *velocities)
        {
            if (!finite(v->linear()) || !finite(v->angular()))
            {
                return false;
            }
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
        if (datagramBytes < kMinConnectRequestBytes)
        {
            reason = DropReason::TooShort;
            return false;
        }
        return validName(packet.message_as_ConnectRequest()->client_name()) &&
               validRoom(packet.message_as_ConnectRequest()->room()) &&
               validToken(packet.message_as_ConnectRequest()->token());
    case wire::Message::Challenge:
        return validCookie(packet.message_as_Challenge()->cookie());
    case wire::Message::ChallengeResponse:
    {
        if (datagramBytes < kMinConnectRequestBytes)
        {
            reason = DropReason::TooShort;
            return false;
        }
        const auto* m = packet.message_as_ChallengeResponse();
        return validCookie(m->cookie()) && validName(m->client_name()) && validRoom(m->room()) &&
               validToken(m->token()) && validSnapshotFormat(m->snapshot_format(), m->snapshot_velocities());
    }
    case wire::Message::ConnectAccepted:
        return validConnectAccepted(*packet.message_as_ConnectAccepted()) &&
               validSnapshotFormat(packet.message_as_ConnectAccepted()->snapshot_format(),
                                   packet.message_as_ConnectAccepted()->snapshot_velocities());
    case wire::Message::ConnectDenied:
        return validEnum(packet.message_as_ConnectDenied()->reason()) &&
               validReason(packet.message_as_ConnectDenied()->message());
    case wire::Message::Snapshot:
    {
        const auto* s = packet.message_as_Snapshot();
        const auto* payload = s->payload();
        return std::isfinite(s->server_time()) && s->server_time() >= 0.0 && payload && payload->size() > 0 &&
               payload->size() <= kMaxSnapshotPayloadBytes;
    }
    case wire::Message::Catalogue:
        return validCatalogue(*packet.message_as_Catalogue());
    case wire::Message::GeometrySlice:
        return validGeometrySlice(*packet.message_as_GeometrySlice());
    case wire::Message::ClientInput:
        return validClientInput(*packet.message_as_ClientInput(), reason) &&
               validGameMessages(*packet.message_as_ClientInput());
    case wire::Message::GameState:
        return validGameState(*packet.message_as_GameState());
    case wire::Message::KeepAlive:
        return std::isfinite(packet.message_as_KeepAlive()->time());
    case wire::Message::Disconnect:
        return validEnum(packet.message_as_Disconnect()->reason()) &&
               validReason(packet.message_as_Disconnect()->message());
    case wire::Message::AdminRequest:
    {
        if (datagramBytes < kMinAdminRequestBytes)
        {
            reason = DropReason::TooShort;
            return false;
        }
        const auto* m = packet.message_as_AdminRequest();
        return m->command() && m->command()->size() > 0 && m->command()->size() <= kMaxAdminCommandBytes &&
               m->mac() && m->mac()->size() == kAdminMacBytes;
    }
    case wire::Message::AdminReply:
    {
        const auto* reply = packet.message_as_AdminReply();
        return (!reply->message() || reply->message()->size() <= kMaxAdminMessageBytes) &&
               (!reply->mac() || reply->mac()->size() == kAdminMacBytes);
    }
    case wire::Message::StructuredSnapshot:
        return validStructuredSnapshot(*packet.message_as_StructuredSnapshot());
    case wire::Message::NONE:
        break;
    }
    reason = DropReason::TypeMismatch;
    return false;
}

wire::Vec3f toWire(const std::array<float, 3>& v)
{
    return wire::Vec3f(v[0], v[1], v[2]);
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
    case DropReason::BadCookie:
        return "bad_cookie";
    case DropReason::BadPayload:
        return "bad_payload";
    case DropReason::NoToken:
        return "no_token";
    case DropReason::BadToken:
        return "bad_token";
    case DropReason::TokenExpired:
        return "token_expired";
    case DropReason::TokenReused:
        return "token_reused";
    case DropReason::TokenRefused:
        return "token_refused";
    case DropReason::Unsealed:
        return "unsealed";
    case DropReason::BadSeal:
        return "bad_seal";
    case DropReason::Replayed:
        return "replayed";
    case DropReason::RateLimited:
        return "rate_limited";
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

DecodeResult decodedCopy(std::span<const std::uint8_t> copy, bool ok, DropReason reason)
{
    DecodeResult result;
    result.bytes = copy;
    result.reason = reason;
    result.packet = ok ? wire::GetPacket(copy.data()) : nullptr;
    return result;
}

DecodeResult decodePacket(std::span<const std::uint8_t> datagram)
{
    DecodeResult result;
    result.bytes = datagram;
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
        result.otherVersion = header->version();
        result.connectRequestOfOtherVersion = header->type() == wire::PacketType::ConnectRequest &&
                                              packet->message_type() == wire::Message::ConnectRequest &&
                                              datagram.size() >= kMinConnectRequestBytes;
        return result;
    }
    if (packet->message_type() == wire::Message::NONE || packet->message() == nullptr ||
        static_cast<std::uint8_t>(header->type()) != static_cast<std::uint8_t>(packet->message_type()))
    {
        result.reason = DropReason::TypeMismatch;
        return result;
    }
    const bool mayRequestFull =
        header->type() == wire::PacketType::ClientInput || header->type() == wire::PacketType::KeepAlive;
    const std::uint8_t knownFlags =
        kHeaderFlagAckValid | (mayRequestFull ? kHeaderFlagFullSnapshotRequest : std::uint8_t{0});
    if ((header->flags() & ~knownFlags) != 0)
    {
        result.reason = DropReason::InvalidField;
        return result;
    }
    if (!validMessage(*packet, datagram.size(), result.reason))
    {
        return result;
    }
    result.packet = packet;
    return result;
}

bool readTokenCredential(const wire::TokenCredential* token, TokenCredentialFields& out)
{
    if (token == nullptr || token->nonce() == nullptr || token->sealed() == nullptr ||
        token->nonce()->size() != out.nonce.size())
    {
        return false;
    }
    out.expireTime = token->expire_time();
    std::copy(token->nonce()->begin(), token->nonce()->end(), out.nonce.begin());
    out.sealed.assign(token->sealed()->begin(), token->sealed()->end());
    return true;
}

SessionParameters readSessionParameters(const wire::ConnectAccepted& m)
{
    SessionParameters out;
    out.clientId = m.client_id();
    out.tickRateHz = m.tick_rate_hz();
    out.snapshotRateHz = m.snapshot_rate_hz();
    out.scene = m.scene() ? m.scene()->str() : std::string();
    if (m.bounds_min() && m.bounds_max())
    {
        out.position.boundsMin = {m.bounds_min()->x(), m.bounds_min()->y(), m.bounds_min()->z()};
        out.position.boundsMax = {m.bounds_max()->x(), m.bounds_max()->y(), m.bounds_max()->z()};
    }
    out.position.stepsPerMetre = m.steps_per_metre();
    out.maxBaselineAgeTicks = m.max_baseline_age_ticks();
    out.firstTick = m.first_tick();
    out.room = m.room() ? m.room()->str() : std::string();
    out.snapshotFormat = m.snapshot_format();
    out.snapshotVelocities = m.snapshot_velocities();
    return out;
}

void readStructuredSnapshot(const wire::StructuredSnapshot& m, StructuredSlice& out)
{
    out.tick = m.tick();
    out.serverTime = m.server_time();
    out.hasBaseline = m.has_baseline();
    out.baselineTick = m.baseline_tick();
    out.firstId = m.first_id();
    out.endId = m.end_id();
    out.checksum = m.checksum();
    out.bodies.clear();
    out.removed.clear();
    out.velocities.clear();
    if (const auto* bodies = m.bodies())
    {
        for (const wire::StructuredBody* b : *bodies)
        {
            QuantizedBody body;
            body.id = b->id();
            body.generation = b->generation();
            body.position = {b->position_x(), b->position_y(), b->position_z()};
            body.orientation = {b->orientation_a(), b->orientation_b(), b->orientation_c()};
            body.largest = b->largest();
            body.atRest = b->at_rest();
            out.bodies.push_back(body);
        }
    }
    if (const auto* removed = m.removed())
    {
        out.removed.assign(removed->begin(), removed->end());
    }
    if (const auto* velocities = m.velocities())
    {
        for (const wire::StructuredVelocity* v : *velocities)
        {
            out.velocities.push_back({{v->linear().x(), v->linear().y(), v->linear().z()},
                                      {v->angular().x(), v->angular().y(), v->angular().z()}});
        }
    }
}

const char* shapeKindName(wire::ShapeKind kind)
{
    switch (kind)
    {
    case wire::ShapeKind::Sphere:
        return "sphere";
    case wire::ShapeKind::Capsule:
        return "capsule";
    case wire::ShapeKind::Box:
        return "box";
    case wire::ShapeKind::Hull:
        return "hull";
    case wire::ShapeKind::Plane:
        return "plane";
    case wire::ShapeKind::Compound:
        return "compound";
    case wire::ShapeKind::Mesh:
        return "mesh";
    case wire::ShapeKind::HeightField:
        return "heightfield";
    }
    return "unknown";
}

void readCatalogue(const wire::Catalogue& message, std::vector<CatalogueEntry>& out)
{
    out.clear();
    if (const auto* entries = message.entries())
    {
        const auto* geometry = message.geometry();
        const bool withGeometry = geometry && geometry->size() == entries->size();
        for (const wire::CatalogueEntry* e : *entries)
        {
            CatalogueEntry entry;
            entry.geometry =
                withGeometry ? geometry->Get(static_cast<flatbuffers::uoffset_t>(out.size())) : 0;
            entry.id = e->id();
            entry.generation = e->generation();
            entry.shape = e->shape();
            entry.removed = e->removed();
            entry.owned = (e->flags() & kCatalogueFlagOwned) != 0;
            entry.extent = {e->extent().x(), e->extent().y(), e->extent().z()};
            out.push_back(entry);
        }
    }
}

float inputComponentLimit(wire::InputKind kind)
{
    switch (kind)
    {
    case wire::InputKind::Force:
        return kMaxInputForce;
    case wire::InputKind::Impulse:
        return kMaxInputImpulse;
    case wire::InputKind::Torque:
        return kMaxInputTorque;
    case wire::InputKind::TargetVelocity:
        return kMaxInputVelocity;
    case wire::InputKind::Spawn:
        return kMaxInputPosition;
    case wire::InputKind::Remove:
        return 0.0f;
    }
    return 0.0f;
}

bool isValidInput(const InputCommand& input)
{
    if (!validEnum(input.kind) || input.sequence == 0)
    {
        return false;
    }
    if (input.kind == wire::InputKind::Spawn ? (input.bodyId != 0 || input.bodyGeneration != 0)
                                             : input.bodyGeneration == 0)
    {
        return false;
    }
    const float limit = inputComponentLimit(input.kind);
    return std::all_of(input.vector.begin(), input.vector.end(),
                       [limit](float v) { return std::isfinite(v) && std::fabs(v) <= limit; });
}

void readInputs(const wire::ClientInput& message, std::vector<InputCommand>& out)
{
    out.clear();
    if (const auto* inputs = message.inputs())
    {
        for (const wire::Input* in : *inputs)
        {
            InputCommand command;
            command.tick = in->tick();
            command.sequence = in->sequence();
            command.bodyId = in->body_id();
            command.bodyGeneration = in->body_generation();
            command.kind = in->kind();
            command.vector = {in->vector().x(), in->vector().y(), in->vector().z()};
            out.push_back(command);
        }
    }
}

bool isValidGameMessage(const GameMessageFields& message)
{
    return message.sequence != 0 && !message.data.empty() && message.data.size() <= kMaxGameMessageBytes &&
           message.viewFromTick <= message.viewToTick && std::isfinite(message.viewFraction) &&
           message.viewFraction >= 0.0f && message.viewFraction <= 1.0f;
}

void readGameMessages(const wire::ClientInput& message, std::vector<GameMessageFields>& out)
{
    out.clear();
    if (const auto* messages = message.messages())
    {
        for (const wire::GameMessage* m : *messages)
        {
            out.push_back(readGameMessage(*m));
        }
    }
}

std::size_t gameMessageWireBytes(std::size_t dataBytes)
{
    // The table (vtable of 6 fields and its offset, 4 + 3 * 8 + 4 + 4 bytes of fields, alignment), the data
    // vector (length and bytes, padded to 4, then up to 8 for the table's uint64s) and the offset in the
    // messages vector: a generous bound, checked by the packet tests.
    return 80 + dataBytes + 12;
}

PacketWriter::PacketWriter() : m_builder(kMaxDatagramBytes + 256)
{
    m_catalogueStaging.reserve(kMaxCatalogueEntriesPerDatagram);
    m_inputStaging.reserve(kMaxInputsPerDatagram);
    m_bodyStaging.reserve(kMaxPacketBytes / kStructuredBodyBytes);
    m_velocityStaging.reserve(kMaxPacketBytes / kStructuredBodyBytes);
}

std::span<const std::uint8_t> PacketWriter::finish(const HeaderFields& fields, wire::PacketType type,
                                                   flatbuffers::Offset<void> message, std::uint16_t version)
{
    const wire::PacketHeader header(kProtocolId, version, type, fields.flags, fields.sequence, fields.ack,
                                    fields.ackBits);
    const auto packet = wire::CreatePacket(m_builder, &header, static_cast<wire::Message>(type), message);
    wire::FinishPacketBuffer(m_builder, packet);
    return {m_builder.GetBufferPointer(), m_builder.GetSize()};
}

std::span<const std::uint8_t> PacketWriter::padded(const HeaderFields& header,
                                                   std::span<const std::uint8_t> cookie,
                                                   const JoinRequest& join, bool isResponse,
                                                   const TokenCredentialFields* token)
{
    // Pad so that the finished datagram is at least kMinConnectRequestBytes. The padding vector's payload
    // is the size we still need after everything else; a first pass measures the rest.
    const std::string_view name = join.clientName.substr(0, kMaxClientNameBytes);
    const std::string_view roomName = join.room.substr(0, kMaxRoomNameBytes);
    std::size_t padding = 0;
    for (int pass = 0; pass < 2; ++pass)
    {
        m_builder.Clear();
        const auto nameOffset = m_builder.CreateString(name.data(), name.size());
        const auto roomOffset = m_builder.CreateString(roomName.data(), roomName.size());
        std::uint8_t* pad = nullptr;
        const auto paddingOffset = m_builder.CreateUninitializedVector<std::uint8_t>(padding, &pad);
        std::fill(pad, pad + padding, std::uint8_t{0});
        flatbuffers::Offset<wire::TokenCredential> tokenOffset;
        if (token != nullptr)
        {
            const auto nonce = m_builder.CreateVector(token->nonce.data(), token->nonce.size());
            const auto sealed = m_builder.CreateVector(token->sealed.data(), token->sealed.size());
            tokenOffset = wire::CreateTokenCredential(m_builder, token->expireTime, nonce, sealed);
        }
        std::span<const std::uint8_t> bytes;
        if (isResponse)
        {
            const auto cookieOffset = m_builder.CreateVector(cookie.data(), cookie.size());
            const auto message = wire::CreateChallengeResponse(
                m_builder, cookieOffset, nameOffset, paddingOffset, roomOffset, join.snapshotRateHz,
                join.spectator, tokenOffset, join.snapshotFormat, join.snapshotVelocities);
            bytes = finish(header, wire::PacketType::ChallengeResponse, message.Union());
        }
        else
        {
            const auto message =
                wire::CreateConnectRequest(m_builder, nameOffset, paddingOffset, roomOffset, tokenOffset);
            bytes = finish(header, wire::PacketType::ConnectRequest, message.Union());
        }
        if (bytes.size() >= kMinConnectRequestBytes)
        {
            return bytes;
        }
        padding += kMinConnectRequestBytes - bytes.size();
    }
    return {m_builder.GetBufferPointer(), m_builder.GetSize()};
}

std::span<const std::uint8_t> PacketWriter::connectRequest(const HeaderFields& header,
                                                           std::string_view clientName, std::string_view room,
                                                           const TokenCredentialFields* token)
{
    JoinRequest join;
    join.clientName = clientName;
    join.room = room;
    return padded(header, {}, join, false, token);
}

std::span<const std::uint8_t> PacketWriter::challenge(const HeaderFields& header,
                                                      std::span<const std::uint8_t> cookie)
{
    m_builder.Clear();
    const auto cookieOffset = m_builder.CreateVector(cookie.data(), cookie.size());
    const auto message = wire::CreateChallenge(m_builder, cookieOffset);
    return finish(header, wire::PacketType::Challenge, message.Union());
}

std::span<const std::uint8_t> PacketWriter::challengeResponse(
    const HeaderFields& header, std::span<const std::uint8_t> cookie, std::string_view clientName,
    std::string_view room, std::uint16_t snapshotRateHz, bool spectator, const TokenCredentialFields* token)
{
    JoinRequest join;
    join.clientName = clientName;
    join.room = room;
    join.snapshotRateHz = snapshotRateHz;
    join.spectator = spectator;
    return padded(header, cookie, join, true, token);
}

std::span<const std::uint8_t> PacketWriter::challengeResponse(const HeaderFields& header,
                                                              std::span<const std::uint8_t> cookie,
                                                              const JoinRequest& join,
                                                              const TokenCredentialFields* token)
{
    return padded(header, cookie, join, true, token);
}

std::span<const std::uint8_t> PacketWriter::connectAccepted(const HeaderFields& header,
                                                            const SessionParameters& session)
{
    m_builder.Clear();
    const std::string_view name = std::string_view(session.scene).substr(0, kMaxSceneNameBytes);
    const auto sceneOffset = m_builder.CreateString(name.data(), name.size());
    const std::string_view room = std::string_view(session.room).substr(0, kMaxRoomNameBytes);
    const auto roomOffset = m_builder.CreateString(room.data(), room.size());
    const wire::Vec3f boundsMin = toWire(session.position.boundsMin);
    const wire::Vec3f boundsMax = toWire(session.position.boundsMax);
    const auto message = wire::CreateConnectAccepted(
        m_builder, session.clientId, session.tickRateHz, session.snapshotRateHz, sceneOffset, &boundsMin,
        &boundsMax, session.position.stepsPerMetre, session.maxBaselineAgeTicks, session.firstTick,
        roomOffset, session.snapshotFormat, session.snapshotVelocities);
    return finish(header, wire::PacketType::ConnectAccepted, message.Union());
}

std::span<const std::uint8_t> PacketWriter::connectDenied(const HeaderFields& header, wire::DenyReason reason,
                                                          std::uint16_t version)
{
    m_builder.Clear();
    const auto message = wire::CreateConnectDenied(m_builder, reason);
    return finish(header, wire::PacketType::ConnectDenied, message.Union(), version);
}

std::span<const std::uint8_t> PacketWriter::connectDenied(const HeaderFields& header, wire::DenyReason reason,
                                                          std::string_view message)
{
    m_builder.Clear();
    const std::string_view cut = message.substr(0, kMaxLogicReasonBytes);
    const auto text = m_builder.CreateString(cut.data(), cut.size());
    const auto denied = wire::CreateConnectDenied(m_builder, reason, text);
    return finish(header, wire::PacketType::ConnectDenied, denied.Union());
}

std::span<const std::uint8_t> PacketWriter::snapshot(const HeaderFields& header, std::uint64_t tick,
                                                     double serverTime, std::span<const std::uint8_t> payload)
{
    m_builder.Clear();
    const auto payloadOffset = m_builder.CreateVector(payload.data(), payload.size());
    const auto message = wire::CreateSnapshot(m_builder, tick, serverTime, payloadOffset);
    return finish(header, wire::PacketType::Snapshot, message.Union());
}

std::span<const std::uint8_t> PacketWriter::structuredSnapshot(const HeaderFields& header,
                                                               const StructuredSliceView& slice)
{
    m_builder.Clear();
    m_bodyStaging.clear();
    m_velocityStaging.clear();
    for (const QuantizedBody& b : slice.bodies)
    {
        m_bodyStaging.emplace_back(b.id, b.generation, b.position[0], b.position[1], b.position[2],
                                   b.orientation[0], b.orientation[1], b.orientation[2], b.largest, b.atRest);
    }
    for (const BodyVelocity& v : slice.velocities)
    {
        m_velocityStaging.emplace_back(toWire(v.linear), toWire(v.angular));
    }
    // `bodies` and `removed` are written even when empty, so that a reader finds them; velocities only when
    // there are some (absent and empty mean the same).
    const auto bodies = m_builder.CreateVectorOfStructs(m_bodyStaging.data(), m_bodyStaging.size());
    const auto removed = m_builder.CreateVector(slice.removed.data(), slice.removed.size());
    flatbuffers::Offset<flatbuffers::Vector<const wire::StructuredVelocity*>> velocities = 0;
    if (!slice.velocities.empty())
    {
        velocities = m_builder.CreateVectorOfStructs(m_velocityStaging.data(), m_velocityStaging.size());
    }
    const auto message = wire::CreateStructuredSnapshot(
        m_builder, slice.tick, slice.serverTime, slice.hasBaseline, slice.baselineTick, slice.firstId,
        slice.endId, slice.checksum, bodies, removed, velocities);
    return finish(header, wire::PacketType::StructuredSnapshot, message.Union());
}

std::span<const std::uint8_t> PacketWriter::catalogue(const HeaderFields& header,
                                                      std::span<const CatalogueEntry> entries)
{
    m_builder.Clear();
    m_catalogueStaging.clear();
    for (const CatalogueEntry& e : entries)
    {
        m_catalogueStaging.emplace_back(e.id, e.generation, e.shape, e.removed,
                                        e.owned ? kCatalogueFlagOwned : std::uint16_t{0}, toWire(e.extent));
    }
    const auto vector = m_builder.CreateVectorOfStructs(m_catalogueStaging.data(), m_catalogueStaging.size());
    m_geometryStaging.clear();
    bool anyGeometry = false;
    for (const CatalogueEntry& e : entries)
    {
        m_geometryStaging.push_back(e.geometry);
        anyGeometry = anyGeometry || e.geometry != 0;
    }
    const auto geometry = anyGeometry ? m_builder.CreateVector(m_geometryStaging) : 0;
    const auto message = wire::CreateCatalogue(m_builder, vector, geometry);
    return finish(header, wire::PacketType::Catalogue, message.Union());
}

std::span<const std::uint8_t> PacketWriter::geometrySlice(const HeaderFields& header, std::uint64_t hash,
                                                          wire::ShapeKind kind, std::uint32_t totalBytes,
                                                          std::uint32_t offset,
                                                          std::span<const std::uint8_t> data)
{
    m_builder.Clear();
    const auto bytes = m_builder.CreateVector(data.data(), data.size());
    const auto message = wire::CreateGeometrySlice(m_builder, hash, kind, totalBytes, offset, bytes);
    return finish(header, wire::PacketType::GeometrySlice, message.Union());
}

std::span<const std::uint8_t> PacketWriter::clientInput(const HeaderFields& header,
                                                        std::span<const InputCommand> inputs)
{
    return clientInput(header, inputs, {});
}

std::span<const std::uint8_t> PacketWriter::clientInput(const HeaderFields& header,
                                                        std::span<const InputCommand> inputs,
                                                        std::span<const GameMessageFields> messages)
{
    m_builder.Clear();
    flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<wire::GameMessage>>> messageVector = 0;
    if (!messages.empty())
    {
        m_messageStaging.clear();
        for (const GameMessageFields& m : messages)
        {
            const auto data = m_builder.CreateVector(m.data.data(), m.data.size());
            m_messageStaging.push_back(wire::CreateGameMessage(m_builder, m.sequence, m.tick, m.viewFromTick,
                                                               m.viewToTick, m.viewFraction, data));
        }
        messageVector = m_builder.CreateVector(m_messageStaging);
    }
    m_inputStaging.clear();
    for (const InputCommand& in : inputs)
    {
        m_inputStaging.emplace_back(in.tick, in.sequence, in.bodyId, in.bodyGeneration, toWire(in.vector),
                                    in.kind);
    }
    flatbuffers::Offset<flatbuffers::Vector<const wire::Input*>> vector = 0;
    if (!m_inputStaging.empty())
    {
        vector = m_builder.CreateVectorOfStructs(m_inputStaging.data(), m_inputStaging.size());
    }
    const auto message = wire::CreateClientInput(m_builder, vector, messageVector);
    return finish(header, wire::PacketType::ClientInput, message.Union());
}

std::span<const std::uint8_t> PacketWriter::gameState(const HeaderFields& header, wire::GameStateScope scope,
                                                      std::uint32_t version,
                                                      std::span<const std::uint8_t> data)
{
    m_builder.Clear();
    const auto bytes = m_builder.CreateVector(data.data(), data.size());
    const auto message = wire::CreateGameState(m_builder, scope, version, bytes);
    return finish(header, wire::PacketType::GameState, message.Union());
}

std::span<const std::uint8_t> PacketWriter::keepAlive(const HeaderFields& header, double time)
{
    m_builder.Clear();
    const auto message = wire::CreateKeepAlive(m_builder, time);
    return finish(header, wire::PacketType::KeepAlive, message.Union());
}

std::span<const std::uint8_t>
PacketWriter::disconnect(const HeaderFields& header, wire::DisconnectReason reason, std::string_view message)
{
    m_builder.Clear();
    flatbuffers::Offset<flatbuffers::String> text = 0;
    if (!message.empty())
    {
        const std::string_view cut = message.substr(0, kMaxLogicReasonBytes);
        text = m_builder.CreateString(cut.data(), cut.size());
    }
    const auto goodbye = wire::CreateDisconnect(m_builder, reason, text);
    return finish(header, wire::PacketType::Disconnect, goodbye.Union());
}

std::span<const std::uint8_t> PacketWriter::adminRequest(const HeaderFields& header,
                                                         std::span<const std::uint8_t> command,
                                                         std::span<const std::uint8_t> mac)
{
    std::size_t padding = 0;
    for (int pass = 0; pass < 2; ++pass)
    {
        m_builder.Clear();
        const auto commandOffset = m_builder.CreateVector(command.data(), command.size());
        const auto macOffset = m_builder.CreateVector(mac.data(), mac.size());
        std::uint8_t* pad = nullptr;
        const auto paddingOffset = m_builder.CreateUninitializedVector<std::uint8_t>(padding, &pad);
        std::fill(pad, pad + padding, std::uint8_t{0});
        const auto message = wire::CreateAdminRequest(m_builder, commandOffset, macOffset, paddingOffset);
        const auto bytes = finish(header, wire::PacketType::AdminRequest, message.Union());
        if (bytes.size() >= kMinAdminRequestBytes)
        {
            return bytes;
        }
        padding += kMinAdminRequestBytes - bytes.size();
    }
    return {m_builder.GetBufferPointer(), m_builder.GetSize()};
}

std::span<const std::uint8_t> PacketWriter::adminReply(const HeaderFields& header, std::uint64_t nonce,
                                                       bool ok, std::string_view message,
                                                       const AdminMacKey* key)
{
    m_builder.Clear();
    const std::string_view text = message.substr(0, kMaxAdminMessageBytes);
    const auto textOffset = m_builder.CreateString(text.data(), text.size());
    flatbuffers::Offset<flatbuffers::Vector<std::uint8_t>> macOffset;
    if (key != nullptr)
    {
        const AdminMac mac = adminReplyMac(*key, nonce, ok, text);
        macOffset = m_builder.CreateVector(mac.data(), mac.size());
    }
    const auto reply = wire::CreateAdminReply(m_builder, nonce, ok, textOffset, macOffset);
    return finish(header, wire::PacketType::AdminReply, reply.Union());
}

std::vector<std::uint8_t> encodeAdminCommand(const AdminCommandFields& c)
{
    flatbuffers::FlatBufferBuilder builder(256);
    const std::string_view room = std::string_view(c.room).substr(0, kMaxRoomNameBytes);
    const std::string_view text = std::string_view(c.text).substr(0, kMaxAdminTextBytes);
    const auto roomOffset = builder.CreateString(room.data(), room.size());
    const auto textOffset = builder.CreateString(text.data(), text.size());
    const wire::Vec3f vector = toWire(c.vector);
    const auto command = wire::CreateAdminCommand(builder, roomOffset, c.nonce, c.time, c.op, c.count,
                                                  c.value, &vector, textOffset);
    builder.Finish(command, kAdminCommandIdentifier);
    return {builder.GetBufferPointer(), builder.GetBufferPointer() + builder.GetSize()};
}

bool decodeAdminCommand(std::span<const std::uint8_t> bytes, AdminCommandFields& out)
{
    if (bytes.size() < 16 || bytes.size() > kMaxAdminCommandBytes)
    {
        return false;
    }
    // The bytes sit at an arbitrary offset inside the datagram: copy them to aligned storage first.
    alignas(8) std::array<std::uint8_t, kMaxAdminCommandBytes> aligned{};
    std::copy(bytes.begin(), bytes.end(), aligned.begin());
    if (!flatbuffers::BufferHasIdentifier(aligned.data(), kAdminCommandIdentifier))
    {
        return false;
    }
    flatbuffers::Verifier::Options options;
    options.max_depth = kMaxVerifierDepth;
    options.max_tables = kMaxVerifierTables;
    flatbuffers::Verifier verifier(aligned.data(), bytes.size(), options);
    if (!verifier.VerifyBuffer<wire::AdminCommand>(kAdminCommandIdentifier))
    {
        return false;
    }
    const auto* c = flatbuffers::GetRoot<wire::AdminCommand>(aligned.data());
    if (!validRoom(c->room()) || (c->text() && c->text()->size() > kMaxAdminTextBytes) ||
        !validEnum(c->op()) || !std::isfinite(c->time()) || !std::isfinite(c->value()) ||
        (c->vector() && !finite(*c->vector())))
    {
        return false;
    }
    out.room = c->room() ? c->room()->str() : std::string();
    out.nonce = c->nonce();
    out.time = c->time();
    out.op = c->op();
    out.count = c->count();
    out.value = c->value();
    out.vector = c->vector() ? std::array<float, 3>{c->vector()->x(), c->vector()->y(), c->vector()->z()}
                             : std::array<float, 3>{};
    out.text = c->text() ? c->text()->str() : std::string();
    return true;
}

HeaderFields AckTracker::nextOutgoing()
{
    HeaderFields fields;
    fields.sequence = m_nextSequence++;
    fields.ack = static_cast<std::uint16_t>(m_received.newest());
    fields.ackBits = m_received.maskBeforeNewest();
    fields.flags = m_received.empty() ? std::uint8_t{0} : kHeaderFlagAckValid;
    return fields;
}

std::uint64_t AckTracker::unwrap(std::uint16_t sequence) const
{
    // Start far from zero so that unwrapping backwards never underflows.
    constexpr std::uint64_t kBase = std::uint64_t{1} << 32;
    if (m_received.empty())
    {
        return kBase + sequence;
    }
    const std::uint64_t newest = m_received.newest();
    const auto newest16 = static_cast<std::uint16_t>(newest);
    return sequenceGreaterThan(sequence, newest16) ? newest + static_cast<std::uint16_t>(sequence - newest16)
                                                   : newest - static_cast<std::uint16_t>(newest16 - sequence);
}

bool AckTracker::hasReceived(std::uint16_t sequence) const
{
    return !m_received.empty() && m_received.contains(unwrap(sequence));
}

bool AckTracker::onReceived(std::uint16_t sequence)
{
    return m_received.record(unwrap(sequence));
}

} // namespace polytope::protocol
