#include "polytope/client/client.h"

#include <algorithm>
#include <cmath>

namespace polytope::client
{
namespace wire = protocol::wire;

namespace
{
constexpr std::size_t kInputDatagramRing = 256;
constexpr std::size_t kSentRing = 1024; ///< datagrams awaiting acknowledgement; at 120 Hz, 8 s of sends
/// Snapshot datagrams recorded within one ackIntervalSeconds after which we acknowledge at once, from
/// receive(), instead of waiting for update(): a header acknowledges only the newest 33 sequences, and a
/// large tick (a full structured snapshot of a big world, say) can arrive as more datagrams than that
/// between two updates. Slower arrivals are acknowledged by update() as usual.
constexpr int kAckEveryRecorded = 16;
/// A ClientInput datagram's bytes besides its inputs and game messages, at most (header, tables, vectors).
constexpr std::size_t kClientInputBaseBytes = 96;
} // namespace

const char* clientStateName(ClientState state)
{
    switch (state)
    {
    case ClientState::Disconnected:
        return "disconnected";
    case ClientState::Connecting:
        return "connecting";
    case ClientState::Connected:
        return "connected";
    case ClientState::ConnectTimedOut:
        return "connect timed out";
    case ClientState::ConnectionDenied:
        return "connection denied";
    case ClientState::ConnectionLost:
        return "connection lost";
    case ClientState::ServerClosed:
        return "server closed the connection";
    }
    return "unknown";
}

Client::Client(const ClientConfig& config, SendFunction send)
    : m_config(config), m_send(std::move(send)), m_inputDatagrams(kInputDatagramRing), m_sent(kSentRing)
{
    if (m_config.token)
    {
        m_credential.expireTime = m_config.token->expireTime;
        m_credential.nonce = m_config.token->nonce;
        m_credential.sealed = m_config.token->sealed;
    }
}

std::span<const std::uint8_t> Client::connectMessage()
{
    const protocol::TokenCredentialFields* token = m_config.token ? &m_credential : nullptr;
    if (m_cookie.empty())
    {
        return m_writer.connectRequest(m_acks.nextOutgoing(), m_config.name, m_config.room, token);
    }
    protocol::JoinRequest join;
    join.clientName = m_config.name;
    join.room = m_config.room;
    join.snapshotRateHz = m_config.snapshotRateHz;
    join.spectator = m_config.spectator;
    join.snapshotFormat = m_config.snapshotFormat;
    join.snapshotVelocities = m_config.snapshotVelocities;
    return m_writer.challengeResponse(m_acks.nextOutgoing(), m_cookie, join, token);
}

bool Client::isFinished() const
{
    return m_state == ClientState::ConnectTimedOut || m_state == ClientState::ConnectionDenied ||
           m_state == ClientState::ConnectionLost || m_state == ClientState::ServerClosed;
}

void Client::send(std::span<const std::uint8_t> datagram, double now)
{
    if (m_channel.active() && m_state == ClientState::Connected)
    {
        datagram = m_channel.seal(datagram); // the handshake is plain; everything after it sealed
        if (datagram.empty())
        {
            return; // larger than a sealed datagram can carry: our own size limits prevent it
        }
    }
    ++m_stats.datagramsSent;
    m_stats.bytesSent += datagram.size();
    m_lastSendTime = now;
    // Every caller stamps the datagram with m_acks.nextOutgoing() just before: its sequence is the one before
    // nextSequence().
    if (m_sentCount - m_resolvedCount >= kSentRing)
    {
        resolveSent(now, true);
    }
    m_sent[m_sentCount % kSentRing] = {static_cast<std::uint16_t>(m_acks.nextSequence() - 1), now, false,
                                       m_state == ClientState::Connected};
    ++m_sentCount;
    m_send(datagram);
}

void Client::resolveSent(double now, bool force)
{
    while (m_resolvedCount < m_sentCount)
    {
        const SentDatagram& sent = m_sent[m_resolvedCount % kSentRing];
        if (!force && now - sent.sendTime < m_config.lossTimeoutSeconds)
        {
            return;
        }
        if (sent.countsForLoss)
        {
            ++(sent.acknowledged ? m_stats.packetsAcknowledged : m_stats.packetsLost);
            m_lossOutcomes[m_lossOutcomeNext] = !sent.acknowledged;
            m_lossOutcomeNext = (m_lossOutcomeNext + 1) % kLossWindow;
            m_lossOutcomeCount = std::min(m_lossOutcomeCount + 1, kLossWindow);
        }
        ++m_resolvedCount;
        if (force)
        {
            return;
        }
    }
}

void Client::onPacketAcks(const wire::PacketHeader& header, double now)
{
    if (m_sentCount == 0)
    {
        return;
    }
    const std::uint16_t newest = m_sent[(m_sentCount - 1) % kSentRing].sequence;
    const std::uint64_t unresolved = m_sentCount - m_resolvedCount;
    protocol::forEachAcked(header,
                           [&](std::uint16_t sequence)
                           {
                               // Sequences newer than ours wrap to a large age and are ignored, like old
                               // ones.
                               const std::uint16_t age = static_cast<std::uint16_t>(newest - sequence);
                               if (age >= unresolved)
                               {
                                   return;
                               }
                               SentDatagram& sent = m_sent[(m_sentCount - 1 - age) % kSentRing];
                               if (sent.sequence != sequence || sent.acknowledged)
                               {
                                   return;
                               }
                               sent.acknowledged = true;
                               // Only the header's newest ack: an older one seen first now (its earlier ack
                               // was lost) would overstate the round trip.
                               if (sequence == header.ack())
                               {
                                   addRttSample(now - sent.sendTime);
                               }
                           });
}

void Client::addRttSample(double seconds)
{
    seconds = std::max(0.0, seconds);
    if (m_stats.rttSamples == 0)
    {
        m_srtt = seconds;
        m_rttVar = seconds / 2.0;
    }
    else
    {
        m_rttVar = 0.75 * m_rttVar + 0.25 * std::abs(m_srtt - seconds);
        m_srtt = 0.875 * m_srtt + 0.125 * seconds;
    }
    ++m_stats.rttSamples;
    if (m_rttHistory.size() >= kRttHistory)
    {
        m_rttHistory.pop_front();
    }
    m_rttHistory.push_back(seconds);
}

void Client::onServerSequence(std::uint16_t sequence)
{
    constexpr auto window = static_cast<std::int64_t>(kLossWindow);
    if (!m_anyServerSequence)
    {
        m_anyServerSequence = true;
        m_firstServerSequence = m_newestServerSequence = sequence;
        m_serverReceived.fill(false);
        m_serverReceived[static_cast<std::size_t>(m_newestServerSequence % window)] = true;
        ++m_stats.serverPacketsReceived;
        return;
    }
    const auto delta = static_cast<std::int16_t>(
        static_cast<std::uint16_t>(sequence - static_cast<std::uint16_t>(m_newestServerSequence)));
    const std::int64_t unwrapped = m_newestServerSequence + delta;
    if (unwrapped > m_newestServerSequence)
    {
        const std::int64_t gap = unwrapped - m_newestServerSequence - 1;
        for (std::int64_t s = std::max(m_newestServerSequence + 1, unwrapped - window); s < unwrapped; ++s)
        {
            m_serverReceived[static_cast<std::size_t>(s % window)] = false;
        }
        m_stats.serverPacketsMissing += static_cast<std::uint64_t>(gap);
        m_newestServerSequence = unwrapped;
    }
    else if (unwrapped < m_firstServerSequence || m_newestServerSequence - unwrapped >= window ||
             m_serverReceived[static_cast<std::size_t>(unwrapped % window)])
    {
        return; // too old to tell, or a duplicate
    }
    else
    {
        --m_stats.serverPacketsMissing; // it arrived late
    }
    m_serverReceived[static_cast<std::size_t>(unwrapped % window)] = true;
    ++m_stats.serverPacketsReceived;
}

double Client::lossFraction() const
{
    if (m_lossOutcomeCount == 0)
    {
        return 0.0;
    }
    const auto lost =
        std::count(m_lossOutcomes.begin(),
                   m_lossOutcomes.begin() + static_cast<std::ptrdiff_t>(m_lossOutcomeCount), true);
    return static_cast<double>(lost) / static_cast<double>(m_lossOutcomeCount);
}

double Client::receiveLossFraction() const
{
    if (!m_anyServerSequence)
    {
        return 0.0;
    }
    const std::int64_t window =
        std::min(static_cast<std::int64_t>(kLossWindow), m_newestServerSequence - m_firstServerSequence + 1);
    std::int64_t missing = 0;
    for (std::int64_t s = m_newestServerSequence - window + 1; s <= m_newestServerSequence; ++s)
    {
        missing +=
            m_serverReceived[static_cast<std::size_t>(s % static_cast<std::int64_t>(kLossWindow))] ? 0 : 1;
    }
    return static_cast<double>(missing) / static_cast<double>(window);
}

void Client::connect(double now)
{
    m_state = ClientState::Connecting;
    m_connectStartTime = now;
    m_lastReceiveTime = now;
    m_cookie.clear();
    m_channel = protocol::SealedChannel();
    send(connectMessage(), now);
}

void Client::disconnect(double now)
{
    if (m_state == ClientState::Connected || m_state == ClientState::Connecting)
    {
        for (int repeat = 0; repeat < 3; ++repeat)
        {
            send(m_writer.disconnect(m_acks.nextOutgoing(), wire::DisconnectReason::ClientQuit), now);
        }
    }
    m_state = ClientState::Disconnected;
}

std::uint32_t Client::sendInput(const protocol::InputCommand& input)
{
    if (m_state != ClientState::Connected || m_pendingInputs.size() >= m_config.maxPendingInputs)
    {
        return 0;
    }
    protocol::InputCommand queued = input;
    queued.sequence = m_nextInputSequence;
    if (!protocol::isValidInput(queued))
    {
        return 0;
    }
    ++m_nextInputSequence;
    m_pendingInputs.push_back(queued);
    ++m_stats.inputsSent;
    m_receivedSinceAck = true; // send it with the next update
    return queued.sequence;
}

std::uint32_t Client::sendGameMessage(std::span<const std::uint8_t> data, std::uint64_t tick,
                                      const ViewTime& view)
{
    if (m_state != ClientState::Connected || m_pendingMessages.size() >= m_config.maxPendingGameMessages)
    {
        return 0;
    }
    PendingMessage pending;
    pending.bytes.assign(data.begin(), data.end());
    pending.fields = {m_nextMessageSequence, tick, view.fromTick, view.toTick, view.fraction, pending.bytes};
    if (!protocol::isValidGameMessage(pending.fields))
    {
        return 0;
    }
    ++m_nextMessageSequence;
    m_pendingMessages.push_back(std::move(pending));
    ++m_stats.gameMessagesSent;
    m_receivedSinceAck = true; // send it with the next update
    return m_pendingMessages.back().fields.sequence;
}

void Client::onGameState(const wire::GameState& message)
{
    ++m_stats.gameStatesReceived;
    GameState& state = message.scope() == wire::GameStateScope::Room ? m_roomState : m_playerState;
    if (message.version() <= state.version)
    {
        ++m_stats.gameStatesStale;
        return;
    }
    state.version = message.version();
    const auto* data = message.data();
    state.data.clear();
    if (data)
    {
        state.data.assign(data->begin(), data->end());
    }
}

protocol::HeaderFields Client::nextSessionHeader()
{
    protocol::HeaderFields header = m_acks.nextOutgoing();
    if (m_wantFullSnapshot)
    {
        header.flags |= protocol::kHeaderFlagFullSnapshotRequest;
        ++m_stats.fullSnapshotRequests;
    }
    return header;
}

void Client::setDecodeFaultForTesting(protocol::SnapshotDecoder::FaultForTesting fault)
{
    m_decodeFault = std::move(fault);
    if (m_receiver)
    {
        m_receiver->setDecodeFaultForTesting(m_decodeFault);
    }
}

void Client::sendAcknowledgement(double now)
{
    // Every pending input, oldest first, up to a datagram's worth: repeated until acknowledged.
    const std::size_t count = std::min(m_pendingInputs.size(), protocol::kMaxInputsPerDatagram);
    std::array<protocol::InputCommand, protocol::kMaxInputsPerDatagram> inputs{};
    std::copy_n(m_pendingInputs.begin(), count, inputs.begin());
    // Then the pending game messages, oldest first, as many as fit in the datagram.
    std::size_t bytes = kClientInputBaseBytes + count * sizeof(wire::Input);
    m_messageScratch.clear();
    for (const PendingMessage& pending : m_pendingMessages)
    {
        bytes += protocol::gameMessageWireBytes(pending.fields.data.size());
        if (m_messageScratch.size() == protocol::kMaxGameMessagesPerDatagram ||
            bytes > protocol::kMaxPacketBytes)
        {
            break;
        }
        m_messageScratch.push_back(pending.fields);
    }
    const protocol::HeaderFields header = nextSessionHeader();
    InputDatagram& record = m_inputDatagrams[header.sequence % kInputDatagramRing];
    const bool anyMessage = !m_messageScratch.empty();
    record = {header.sequence,
              count ? inputs[0].sequence : 0,
              count ? inputs[count - 1].sequence : 0,
              count > 0 || anyMessage,
              anyMessage ? m_messageScratch.front().sequence : 0,
              anyMessage ? m_messageScratch.back().sequence : 0};
    send(m_writer.clientInput(header, std::span(inputs.data(), count), m_messageScratch), now);
    m_receivedSinceAck = false;
    m_recordedSinceAck = 0;
}

void Client::update(double now)
{
    if (m_state == ClientState::Connecting)
    {
        if (now - m_connectStartTime > m_config.connectTimeoutSeconds)
        {
            m_state = ClientState::ConnectTimedOut;
            return;
        }
        if (now - m_lastSendTime >= m_config.connectResendSeconds)
        {
            send(connectMessage(), now);
        }
    }
    else if (m_state == ClientState::Connected)
    {
        resolveSent(now, false);
        if (now - m_lastReceiveTime > m_config.serverTimeoutSeconds)
        {
            m_state = ClientState::ConnectionLost;
            return;
        }
        if (m_receivedSinceAck && now - m_lastSendTime >= m_config.ackIntervalSeconds)
        {
            sendAcknowledgement(now);
        }
        else if (now - m_lastSendTime >= m_config.keepAliveSeconds)
        {
            if (m_pendingInputs.empty() && m_pendingMessages.empty())
            {
                send(m_writer.keepAlive(nextSessionHeader(), now), now);
            }
            else
            {
                sendAcknowledgement(now);
            }
        }
    }
}

void Client::onServerAcks(const wire::PacketHeader& header)
{
    protocol::forEachAcked(
        header,
        [&](std::uint16_t sequence)
        {
            InputDatagram& record = m_inputDatagrams[sequence % kInputDatagramRing];
            if (!record.valid || record.sequence != sequence)
            {
                return;
            }
            record.valid = false;
            const auto before = m_pendingInputs.size();
            std::erase_if(m_pendingInputs, [&](const protocol::InputCommand& in)
                          { return in.sequence >= record.firstInput && in.sequence <= record.lastInput; });
            m_stats.inputsAcknowledged += before - m_pendingInputs.size();
            if (record.firstMessage != 0)
            {
                const auto messagesBefore = m_pendingMessages.size();
                std::erase_if(m_pendingMessages,
                              [&](const PendingMessage& m) {
                                  return m.fields.sequence >= record.firstMessage &&
                                         m.fields.sequence <= record.lastMessage;
                              });
                m_stats.gameMessagesAcknowledged += messagesBefore - m_pendingMessages.size();
            }
        });
}

void Client::receive(std::span<const std::uint8_t> datagram, double now)
{
    m_stats.bytesReceived += datagram.size();
    std::span<const std::uint8_t> bytes = datagram;
    if (protocol::isSealed(datagram))
    {
        std::span<const std::uint8_t> plain;
        const protocol::OpenError error =
            m_channel.active() ? m_channel.open(datagram, plain) : protocol::OpenError::Forged;
        if (error != protocol::OpenError::None)
        {
            m_stats.drops.add(error == protocol::OpenError::Replayed   ? protocol::DropReason::Replayed
                              : error == protocol::OpenError::TooLarge ? protocol::DropReason::TooLarge
                                                                       : protocol::DropReason::BadSeal);
            return;
        }
        bytes = plain;
    }
    const protocol::DecodeResult decoded = protocol::decodePacket(bytes);
    if (!decoded.ok())
    {
        m_stats.drops.add(decoded.reason);
        return;
    }
    const wire::Packet& packet = *decoded.packet;
    const auto type = decoded.type();
    // With keys, only the two handshake replies may come plain (ConnectDenied only while connecting).
    if (m_channel.active() && bytes.data() == datagram.data() && type != wire::PacketType::Challenge &&
        type != wire::PacketType::ConnectDenied)
    {
        m_stats.drops.add(protocol::DropReason::Unsealed);
        return;
    }
    const bool connecting = m_state == ClientState::Connecting;
    const bool connected = m_state == ClientState::Connected;
    bool expected = false;
    switch (type)
    {
    case wire::PacketType::Challenge:
    case wire::PacketType::ConnectDenied:
        expected = connecting;
        break;
    case wire::PacketType::ConnectAccepted:
        expected = connecting || connected;
        break;
    case wire::PacketType::Snapshot:
        expected = connected && m_session.snapshotFormat == wire::SnapshotFormat::Compressed;
        break;
    case wire::PacketType::StructuredSnapshot:
        expected = connected && m_session.snapshotFormat == wire::SnapshotFormat::Structured;
        break;
    case wire::PacketType::Catalogue:
    case wire::PacketType::GeometrySlice:
    case wire::PacketType::GameState:
        expected = connected;
        break;
    case wire::PacketType::KeepAlive:
    case wire::PacketType::Disconnect:
        expected = connecting || connected;
        break;
    default:
        break;
    }
    if (!expected)
    {
        m_stats.drops.add(protocol::DropReason::UnexpectedMessage);
        return;
    }
    ++m_stats.datagramsReceived;
    m_lastReceiveTime = now;
    if (type != wire::PacketType::Challenge && type != wire::PacketType::ConnectDenied)
    {
        // A packet of the session: its sequence (loss of the server's packets) and acks (our RTT, our loss).
        onServerSequence(packet.header()->sequence());
        onPacketAcks(*packet.header(), now);
    }

    switch (type)
    {
    case wire::PacketType::Challenge:
    {
        // Stateless on the server: nothing of ours to acknowledge. Echo the cookie at once. Only the first
        // is taken: with a token, the session keys come from its salt, and later challenges (answers to
        // resent requests) carry other salts.
        if (m_cookie.empty())
        {
            const auto* cookie = packet.message_as_Challenge()->cookie();
            m_cookie.assign(cookie->begin(), cookie->end());
            if (m_config.token)
            {
                m_channel = protocol::SealedChannel(protocol::deriveSessionKeys(
                    m_config.token->clientToServerKey, m_config.token->serverToClientKey,
                    std::span<const std::uint8_t, protocol::kSessionSaltBytes>(m_cookie.data(),
                                                                               protocol::kSessionSaltBytes),
                    false));
            }
        }
        send(connectMessage(), now);
        return;
    }
    case wire::PacketType::ConnectDenied:
        m_state = ClientState::ConnectionDenied;
        m_denyReason = packet.message_as_ConnectDenied()->reason();
        if (const auto* message = packet.message_as_ConnectDenied()->message())
        {
            m_serverMessage = message->str();
        }
        return;
    case wire::PacketType::ConnectAccepted:
    {
        m_acks.onReceived(packet.header()->sequence());
        if (connecting)
        {
            m_session = protocol::readSessionParameters(*packet.message_as_ConnectAccepted());
            protocol::SnapshotCodecConfig codec;
            codec.position = m_session.position;
            codec.maxBaselineAgeTicks = m_session.maxBaselineAgeTicks;
            codec.maxSlicePayloadBytes = protocol::kMaxSnapshotPayloadBytes;
            m_receiver = std::make_unique<protocol::SnapshotReceiver>(codec);
            if (m_decodeFault)
            {
                m_receiver->setDecodeFaultForTesting(m_decodeFault);
            }
            m_state = ClientState::Connected;
        }
        m_receivedSinceAck = true;
        return;
    }
    case wire::PacketType::Snapshot:
    case wire::PacketType::StructuredSnapshot:
        onServerAcks(*packet.header());
        // Acknowledged only once decoded: the server then knows the client holds it as a baseline.
        if (type == wire::PacketType::Snapshot
                ? onSnapshot(*packet.message_as_Snapshot(), datagram.size(), now)
                : onStructuredSnapshot(*packet.message_as_StructuredSnapshot(), datagram.size(), now))
        {
            m_acks.onReceived(packet.header()->sequence());
            m_receivedSinceAck = true;
            m_burstStartTime = m_recordedSinceAck == 0 ? now : m_burstStartTime;
            if (++m_recordedSinceAck >= kAckEveryRecorded &&
                now - m_burstStartTime <= m_config.ackIntervalSeconds)
            {
                sendAcknowledgement(now);
            }
        }
        return;
    case wire::PacketType::Catalogue:
        onServerAcks(*packet.header());
        m_acks.onReceived(packet.header()->sequence());
        m_receivedSinceAck = true;
        onCatalogue(*packet.message_as_Catalogue(), now);
        return;
    case wire::PacketType::GeometrySlice:
        // Acknowledged whether kept or refused: a refusal (a wrong size, the memory cap, a wrong hash) does
        // not go away with a resend, and the geometry only changes how a body is drawn (STANDARD.md 12.4).
        onServerAcks(*packet.header());
        m_acks.onReceived(packet.header()->sequence());
        m_receivedSinceAck = true;
        m_geometry.add(*packet.message_as_GeometrySlice());
        return;
    case wire::PacketType::KeepAlive:
        onServerAcks(*packet.header());
        m_acks.onReceived(packet.header()->sequence());
        return;
    case wire::PacketType::GameState:
        onServerAcks(*packet.header());
        m_acks.onReceived(packet.header()->sequence());
        m_receivedSinceAck = true;
        onGameState(*packet.message_as_GameState());
        return;
    case wire::PacketType::Disconnect:
        m_state = ClientState::ServerClosed;
        m_disconnectReason = packet.message_as_Disconnect()->reason();
        if (const auto* message = packet.message_as_Disconnect()->message())
        {
            m_serverMessage = message->str();
        }
        return;
    default:
        return;
    }
}

bool Client::onSnapshot(const wire::Snapshot& slice, std::size_t bytes, double now)
{
    const std::uint64_t tick = slice.tick();
    const auto* payload = slice.payload();
    const protocol::SliceOutcome outcome = m_receiver->onSlice(tick, {payload->data(), payload->size()});
    return onSliceOutcome(outcome, tick, slice.server_time(), bytes, now);
}

bool Client::onStructuredSnapshot(const wire::StructuredSnapshot& message, std::size_t bytes, double now)
{
    protocol::readStructuredSnapshot(message, m_structuredScratch);
    const protocol::StructuredSlice& slice = m_structuredScratch;
    const protocol::SliceOutcome outcome = m_receiver->onStructuredSlice(slice.view());
    if (outcome.accepted() && !outcome.duplicate && !slice.velocities.empty())
    {
        for (std::size_t i = 0; i < slice.bodies.size(); ++i)
        {
            ListedVelocity& listed = m_velocities[slice.bodies[i].id];
            if (listed.generation != slice.bodies[i].generation || listed.tick <= slice.tick)
            {
                listed = {slice.bodies[i].generation, slice.tick, slice.velocities[i]};
            }
        }
    }
    return onSliceOutcome(outcome, slice.tick, slice.serverTime, bytes, now);
}

bool Client::onSliceOutcome(const protocol::SliceOutcome& outcome, std::uint64_t tick, double serverTime,
                            std::size_t bytes, double now)
{
    if (outcome.error != protocol::CodecError::None)
    {
        ++m_stats.sliceErrors[static_cast<std::size_t>(outcome.error)];
        m_stats.drops.add(protocol::DropReason::BadPayload);
        if (outcome.error == protocol::CodecError::ChecksumMismatch)
        {
            // Our decoder disagrees with the server's encoder: the slice is neither kept nor acknowledged,
            // and a full snapshot (which needs no baseline) is asked for with the next datagram.
            ++m_stats.checksumMismatches;
            m_mismatchTick = m_wantFullSnapshot ? std::max(m_mismatchTick, tick) : tick;
            m_wantFullSnapshot = true;
            m_receivedSinceAck = true;
        }
        return false;
    }
    if (outcome.stale)
    {
        ++m_stats.staleSlices;
        return false;
    }
    if (outcome.duplicate)
    {
        ++m_stats.duplicateSlices;
        return true;
    }
    ++m_stats.slicesDecoded;
    if (outcome.full && tick > m_mismatchTick)
    {
        m_wantFullSnapshot = false;
    }
    auto& [tickBytes, tickServerTime] = m_tickBytes[tick];
    tickBytes += bytes;
    tickServerTime = serverTime;
    if (outcome.completed)
    {
        ++m_stats.snapshotsCompleted;
        if (m_anyShown && tick <= m_lastShownTick)
        {
            ++m_stats.snapshotsSuperseded; // reordered: a newer tick was shown already
            m_tickBytes.erase(tick);
        }
        else
        {
            if (m_waiting && m_waitingTick < tick)
            {
                ++m_stats.snapshotsSuperseded;
                m_tickBytes.erase(m_waitingTick);
                m_waiting = false;
            }
            if (!tryShow(tick, now) && (!m_waiting || m_waitingTick < tick))
            {
                m_waiting = true;
                m_waitingTick = tick;
            }
        }
    }
    // Forget byte counts of ticks that will never complete.
    while (!m_tickBytes.empty() && m_tickBytes.begin()->first + m_session.maxBaselineAgeTicks < tick)
    {
        m_tickBytes.erase(m_tickBytes.begin());
    }
    return true;
}

void Client::onCatalogue(const wire::Catalogue& message, double now)
{
    protocol::readCatalogue(message, m_catalogueScratch);
    for (const protocol::CatalogueEntry& entry : m_catalogueScratch)
    {
        ++m_stats.catalogueEntries;
        // Generations only grow per slot, and datagrams arrive late, duplicated and out of order: an entry
        // older than what we know (a live one of a newer generation, or a removal at or after it) is stale.
        auto it = m_catalogue.find(entry.id);
        std::uint32_t& removedUpTo = m_removedGenerations[entry.id];
        if ((it != m_catalogue.end() && entry.generation < it->second.generation) ||
            entry.generation <= removedUpTo)
        {
            ++m_stats.catalogueStale;
            continue;
        }
        if (entry.removed)
        {
            removedUpTo = entry.generation;
            if (it != m_catalogue.end())
            {
                m_catalogue.erase(it);
            }
            continue;
        }
        m_catalogue[entry.id] = entry;
    }
    if (m_waiting && tryShow(m_waitingTick, now))
    {
        m_waiting = false;
    }
}

bool Client::tryShow(std::uint64_t tick, double now)
{
    const std::vector<protocol::QuantizedBody>* bodies = m_receiver->find(tick);
    if (bodies == nullptr)
    {
        return false;
    }
    const auto shapeOf = [this](const protocol::QuantizedBody& b) -> const protocol::CatalogueEntry*
    {
        const auto it = m_catalogue.find(b.id);
        return it == m_catalogue.end() || it->second.generation != b.generation ? nullptr : &it->second;
    };
    std::size_t unknown = 0;
    for (const protocol::QuantizedBody& b : *bodies)
    {
        unknown += shapeOf(b) == nullptr ? 1 : 0;
    }
    // The first snapshot waits for every shape. After that, a body whose catalogue entry has not arrived
    // yet (one just created, its entry lost once) is left out of `bodies` until it does, rather than
    // holding back the whole world for a resend.
    if (unknown > 0 && !m_anyShown)
    {
        return false;
    }
    ReceivedSnapshot snapshot;
    snapshot.bodiesWithoutShape = unknown;
    m_stats.bodiesWithoutShape += unknown;
    snapshot.tick = tick;
    snapshot.receiveTime = now;
    if (const auto it = m_tickBytes.find(tick); it != m_tickBytes.end())
    {
        snapshot.bytes = it->second.first;
        snapshot.serverTime = it->second.second;
        m_tickBytes.erase(it);
    }
    snapshot.quantized = *bodies;
    snapshot.bodies.reserve(bodies->size());
    for (const protocol::QuantizedBody& q : *bodies)
    {
        const protocol::CatalogueEntry* entry = shapeOf(q);
        if (entry == nullptr)
        {
            continue;
        }
        const protocol::CatalogueEntry& shape = *entry;
        SnapshotBody body;
        body.id = q.id;
        body.generation = q.generation;
        body.shape = shape.shape;
        body.extent = shape.extent;
        body.geometry = shape.geometry;
        body.atRest = q.atRest;
        body.position = protocol::dequantizePosition(m_receiver->config().position, q.position);
        body.orientation = protocol::dequantizeOrientation({q.largest, q.orientation});
        if (const auto listed = m_velocities.find(q.id);
            listed != m_velocities.end() && listed->second.generation == q.generation)
        {
            body.velocity = listed->second.velocity;
        }
        snapshot.bodies.push_back(body);
    }
    m_anyShown = true;
    m_lastShownTick = tick;
    ++m_stats.snapshotsShown;
    if (m_complete.size() >= m_config.maxQueuedSnapshots)
    {
        m_complete.pop_front();
    }
    m_complete.push_back(std::move(snapshot));
    return true;
}

bool Client::popSnapshot(ReceivedSnapshot& out)
{
    if (m_complete.empty())
    {
        return false;
    }
    out = std::move(m_complete.front());
    m_complete.pop_front();
    return true;
}

std::vector<protocol::CatalogueEntry> Client::ownedBodies() const
{
    std::vector<protocol::CatalogueEntry> out;
    for (const auto& [id, entry] : m_catalogue)
    {
        if (entry.owned && !entry.removed)
        {
            out.push_back(entry);
        }
    }
    return out;
}

} // namespace polytope::client
