#include "polytope/server/server.h"

#include "polytope/physics/scenes.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace polytope::server
{
namespace wire = protocol::wire;

std::string ServerConfig::validate() const
{
    if (tickRateHz < 1 || tickRateHz > 1000)
    {
        return "tick rate must be 1..1000 Hz, got " + std::to_string(tickRateHz);
    }
    if (snapshotRateHz < 1 || snapshotRateHz > tickRateHz)
    {
        return "snapshot rate must be 1..tick rate (" + std::to_string(tickRateHz) + ") Hz, got " +
               std::to_string(snapshotRateHz);
    }
    if (!(clientTimeoutSeconds > 0.0) || !std::isfinite(clientTimeoutSeconds))
    {
        return "client timeout must be a positive number of seconds";
    }
    if (maxClients < 1 || maxClients > 4096)
    {
        return "max clients must be 1..4096, got " + std::to_string(maxClients);
    }
    if (maxCatchUpTicks < 1)
    {
        return "max catch-up ticks must be at least 1";
    }
    if (!quantization.isValid())
    {
        return "snapshot quantization: bounds must be finite with max > min, resolution 1..65536 steps/m";
    }
    if (maxBaselineAgeTicks < 1 || maxBaselineAgeTicks > 65536)
    {
        return "max baseline age must be 1..65536 ticks, got " + std::to_string(maxBaselineAgeTicks);
    }
    if (idleHeartbeatTicks < 1)
    {
        return "idle heartbeat must be at least 1 tick";
    }
    if (!(cookieLifetimeSeconds >= 1.0 && cookieLifetimeSeconds <= 60.0))
    {
        return "cookie lifetime must be 1..60 s";
    }
    if (!(catalogueResendSeconds > 0.0) || !std::isfinite(catalogueResendSeconds))
    {
        return "catalogue resend interval must be a positive number of seconds";
    }
    if (maxCatalogueDatagramsPerTick < 1 || maxInputLeadTicks < 1 || maxQueuedInputs < 1)
    {
        return "catalogue datagrams per tick, input lead and input queue must be at least 1";
    }
    if (room.empty() || room.size() > protocol::kMaxRoomNameBytes)
    {
        return "room name must be 1..64 bytes";
    }
    if (maxBodiesPerClient < 0 || maxBodiesPerClient > 1024)
    {
        return "max bodies per client must be 0..1024, got " + std::to_string(maxBodiesPerClient);
    }
    if (!(maxInputsPerSecond > 0.0) || !std::isfinite(maxInputsPerSecond) || !(maxInputBurst >= 1.0) ||
        !std::isfinite(maxInputBurst))
    {
        return "input rate limit must be positive with a burst of at least 1";
    }
    return {};
}

namespace
{
/// Built-in scenes' player: a 0.4 m ball on a ring of spawn points around the origin, 3 m up.
bool spawnDefaultPlayer(physics::World& world, std::uint32_t spawnIndex, const physics::Vec3* at, physics::BodyId& out)
{
    physics::BodyDesc desc;
    desc.shape = physics::Shape::makeSphere(0.4f);
    desc.density = 500.0f;
    desc.friction = 0.6f;
    desc.restitution = 0.2f;
    desc.linearDamping = 0.1f;
    desc.angularDamping = 0.5f;
    if (at)
    {
        desc.transform.p = *at;
    }
    else
    {
        const float angle = 2.39996323f * static_cast<float>(spawnIndex % 64); // golden angle
        const float radius = 6.0f + 1.0f * static_cast<float>((spawnIndex / 64) % 8);
        desc.transform.p = {radius * std::cos(angle), 3.0f, radius * std::sin(angle)};
    }
    const physics::CreateBodyResult result = world.createBody(desc);
    out = result.id;
    return result.status == physics::WorldStatus::Ok;
}
} // namespace

bool Server::buildWorld(const ServerConfig& config, physics::World& world, std::string& error,
                        std::shared_ptr<const SceneDescription>& file) const
{
    file.reset();
    if (config.buildScene)
    {
        if (!config.buildScene(world))
        {
            error = "scene '" + config.scene + "' does not fit in the world's capacity";
            return false;
        }
        return true;
    }
    if (const physics::SceneInfo* info = physics::findScene(config.scene))
    {
        if (!info->build(world))
        {
            error = "scene '" + config.scene + "' does not fit in the world's capacity";
            return false;
        }
        return true;
    }
    const bool looksLikeFile = config.scene.find('/') != std::string::npos ||
                               (config.scene.size() > 5 && config.scene.ends_with(".json"));
    if (!looksLikeFile)
    {
        std::string known;
        for (const physics::SceneInfo& info : physics::builtinScenes())
        {
            known += (known.empty() ? "" : ", ") + std::string(info.name);
        }
        error = "unknown scene '" + config.scene + "' (built-in scenes: " + known + "; or a .json scene file)";
        return false;
    }
    auto description = std::make_shared<SceneDescription>();
    if (!loadSceneFile(config.scene, *description, error) || !buildScene(*description, world, error))
    {
        return false;
    }
    file = std::move(description);
    return true;
}

void Server::adoptSceneRules(std::shared_ptr<const SceneDescription> file)
{
    m_sceneFile = std::move(file);
    if (!m_sceneFile)
    {
        m_config.spawnPlayer = m_explicitSpawn ? m_explicitSpawn
                                               : (!m_config.buildScene && m_config.playerBodies ? spawnDefaultPlayer
                                                                                                 : SpawnFunction{});
        return;
    }
    const SceneDescription& scene = *m_sceneFile;
    m_config.allowClientSpawn = scene.allowClientSpawn;
    m_config.maxBodiesPerClient = static_cast<int>(std::min<std::uint32_t>(scene.maxBodiesPerClient, 1024));
    m_config.keepBodiesOnLeave = scene.keepBodiesOnLeave;
    if (!scene.player)
    {
        m_config.spawnPlayer = nullptr;
        return;
    }
    m_config.spawnPlayer = [file = m_sceneFile](physics::World& world, std::uint32_t spawnIndex,
                                                const physics::Vec3* at, physics::BodyId& out)
    {
        physics::BodyDesc desc;
        std::string error;
        if (!makePlayerBody(*file, spawnIndex, world, desc, error))
        {
            spdlog::warn("player body: {}", error);
            return false;
        }
        if (at)
        {
            desc.transform.p = *at;
        }
        const physics::CreateBodyResult result = world.createBody(desc);
        out = result.id;
        return result.status == physics::WorldStatus::Ok;
    };
}

std::unique_ptr<Server> Server::make(const ServerConfig& config, SendFunction send, std::string& error,
                                     const ConnectCookies::Key* cookieKey)
{
    error = config.validate();
    if (!error.empty())
    {
        return nullptr;
    }
    std::unique_ptr<Server> server(new Server(config, std::move(send), cookieKey));
    std::shared_ptr<const SceneDescription> file;
    if (!server->buildWorld(server->m_config, server->m_world, error, file))
    {
        return nullptr;
    }
    server->m_explicitSpawn = config.spawnPlayer;
    server->adoptSceneRules(std::move(file));
    return server;
}

std::unique_ptr<Server> Server::create(const ServerConfig& config, SendFunction send, std::string& error)
{
    return make(config, std::move(send), error, nullptr);
}

std::unique_ptr<Server> Server::create(const ServerConfig& config, SendFunction send, std::string& error,
                                       const ConnectCookies::Key& cookieKey)
{
    return make(config, std::move(send), error, &cookieKey);
}

namespace
{
protocol::SnapshotCodecConfig codecConfigOf(const ServerConfig& config)
{
    protocol::SnapshotCodecConfig codec;
    codec.position = config.quantization;
    codec.maxBaselineAgeTicks = config.maxBaselineAgeTicks;
    codec.maxSlicePayloadBytes = protocol::kMaxSnapshotPayloadBytes;
    return codec;
}
} // namespace

Server::Server(const ServerConfig& config, SendFunction send, const ConnectCookies::Key* cookieKey)
    : m_config(config), m_send(std::move(send)),
      m_cookies(cookieKey ? ConnectCookies(*cookieKey, config.cookieLifetimeSeconds)
                          : ConnectCookies(config.cookieLifetimeSeconds)),
      m_codec(codecConfigOf(config)), m_history(config.maxBaselineAgeTicks), m_encoder(m_codec),
      m_tickSeconds(1.0 / config.tickRateHz),
      m_ticksPerSnapshot(std::max(1, static_cast<int>(std::lround(static_cast<double>(config.tickRateHz) /
                                                                  config.snapshotRateHz))))
{
}

void Server::send(const protocol::Address& to, std::span<const std::uint8_t> datagram)
{
    ++m_metrics.datagramsOut;
    m_metrics.bytesOut += datagram.size();
    if (m_config.maxClientKbps > 0)
    {
        if (const auto it = m_sessions.find(to); it != m_sessions.end())
        {
            it->second.budgetTokens -= static_cast<double>(datagram.size());
        }
    }
    m_send(to, datagram);
}

void Server::receive(const protocol::Address& from, std::span<const std::uint8_t> datagram, double now)
{
    receive(from, protocol::decodePacket(datagram), datagram.size(), now);
}

void Server::receive(const protocol::Address& from, const protocol::DecodeResult& decoded, std::size_t bytes,
                     double now)
{
    if (m_receiveTap)
    {
        m_receiveTap(from, decoded.bytes, now);
    }
    m_metrics.bytesIn += bytes;
    if (!decoded.ok())
    {
        m_metrics.drops.add(decoded.reason);
        spdlog::debug("ignored datagram from {}: {} ({} bytes)", from.toString(),
                      protocol::dropReasonName(decoded.reason), bytes);
        return;
    }
    const wire::Packet& packet = *decoded.packet;
    const wire::PacketType type = decoded.type();
    if (type == wire::PacketType::ConnectRequest)
    {
        ++m_metrics.datagramsIn;
        handleConnectRequest(from, now);
        return;
    }
    if (type == wire::PacketType::ChallengeResponse)
    {
        handleChallengeResponse(from, packet, now);
        return;
    }

    auto it = m_sessions.find(from);
    if (it == m_sessions.end() && type == wire::PacketType::Disconnect)
    {
        // The redundant copies of a goodbye already handled (a Disconnect is sent three times): not an error.
        ++m_metrics.datagramsIn;
        return;
    }
    const bool fromClient = type == wire::PacketType::KeepAlive || type == wire::PacketType::Disconnect ||
                            type == wire::PacketType::ClientInput;
    if (it == m_sessions.end() || !fromClient)
    {
        m_metrics.drops.add(protocol::DropReason::UnexpectedMessage);
        spdlog::debug("ignored {} from {}: unexpected_message ({})", wire::EnumNamePacketType(type), from.toString(),
                      it == m_sessions.end() ? "no session" : "not a client message");
        return;
    }
    ++m_metrics.datagramsIn;
    Session& session = it->second;
    session.acks.onReceived(packet.header()->sequence());
    session.lastReceiveTime = now;
    handleAcks(session, *packet.header());
    if (type == wire::PacketType::ClientInput)
    {
        handleInputs(session, *packet.message_as_ClientInput(), now);
    }
    else if (type == wire::PacketType::Disconnect)
    {
        ++m_metrics.clientsDisconnected;
        endSession(it, "disconnected");
    }
}

void Server::endSession(std::map<protocol::Address, Session>::iterator it, const char* why)
{
    Session& session = it->second;
    spdlog::info("client {} ({}, {}) {}; {} client(s) left", session.clientId, session.name, it->first.toString(), why,
                 m_sessions.size() - 1);
    releaseBodies(session);
    const protocol::Address address = it->first;
    m_sessions.erase(it);
    if (m_sessionObserver)
    {
        m_sessionObserver(address, false);
    }
}

Server::Session* Server::findSession(std::uint32_t clientId, protocol::Address* address)
{
    for (auto& [from, session] : m_sessions)
    {
        if (session.clientId == clientId)
        {
            if (address)
            {
                *address = from;
            }
            return &session;
        }
    }
    return nullptr;
}

const protocol::SnapshotFrame* Server::sentFrame(std::uint32_t clientId, std::uint64_t tick) const
{
    for (const auto& [from, session] : m_sessions)
    {
        if (session.clientId == clientId)
        {
            return session.sentFrames ? session.sentFrames->find(tick) : m_history.find(tick);
        }
    }
    return nullptr;
}

std::vector<physics::BodyId> Server::ownedBodies(std::uint32_t clientId) const
{
    for (const auto& [from, session] : m_sessions)
    {
        if (session.clientId == clientId)
        {
            return session.owned;
        }
    }
    return {};
}

bool Server::ownsBody(const Session& session, physics::BodyId id) const
{
    return std::find(session.owned.begin(), session.owned.end(), id) != session.owned.end();
}

bool Server::spawnFor(Session& session, const physics::Vec3* at)
{
    if (!m_config.spawnPlayer || session.owned.size() >= static_cast<std::size_t>(m_config.maxBodiesPerClient))
    {
        return false;
    }
    physics::BodyId id;
    if (!m_config.spawnPlayer(m_world, m_spawnCount, at, id))
    {
        spdlog::warn("could not spawn a body for client {} (world full?)", session.clientId);
        return false;
    }
    ++m_spawnCount;
    ++m_metrics.bodiesSpawned;
    session.owned.push_back(id);
    return true;
}

void Server::releaseBodies(Session& session)
{
    if (!m_config.keepBodiesOnLeave)
    {
        for (const physics::BodyId id : session.owned)
        {
            if (m_world.destroyBody(id) == physics::WorldStatus::Ok)
            {
                ++m_metrics.bodiesRemoved;
            }
        }
    }
    session.owned.clear();
}

void Server::handleConnectRequest(const protocol::Address& from, double now)
{
    // Stateless: answer with a cookie only the requester's address can echo, and forget the request.
    const ConnectCookies::Cookie cookie = m_cookies.issue(from, now);
    ++m_metrics.challengesSent;
    send(from, m_writer.challenge({}, cookie));
}

protocol::SessionParameters Server::sessionParameters(const Session& session) const
{
    protocol::SessionParameters p;
    p.clientId = session.clientId;
    p.tickRateHz = static_cast<std::uint16_t>(m_config.tickRateHz);
    // Rounded down: the granted rate never exceeds the real one (tick rate / ticks per snapshot).
    p.snapshotRateHz = static_cast<std::uint16_t>(std::max(1, m_config.tickRateHz / session.ticksPerSnapshot));
    p.scene = m_config.scene;
    p.room = m_config.room;
    p.position = m_config.quantization;
    p.maxBaselineAgeTicks = m_config.maxBaselineAgeTicks;
    p.firstTick = m_metrics.ticks;
    return p;
}

void Server::handleChallengeResponse(const protocol::Address& from, const wire::Packet& packet, double now)
{
    const auto* message = packet.message_as_ChallengeResponse();
    const auto* cookie = message->cookie(); // size checked by decodePacket
    const CookieCheck check = m_cookies.verify(from, {cookie->data(), cookie->size()}, now);
    if (check != CookieCheck::Valid)
    {
        m_metrics.drops.add(protocol::DropReason::BadCookie);
        ++(check == CookieCheck::Expired ? m_metrics.cookiesExpired : m_metrics.cookiesForged);
        spdlog::debug("ignored challenge response from {}: bad_cookie ({})", from.toString(), cookieCheckName(check));
        return;
    }
    ++m_metrics.datagramsIn;
    auto it = m_sessions.find(from);
    if (it == m_sessions.end())
    {
        if (m_sessions.size() >= static_cast<std::size_t>(m_config.maxClients))
        {
            ++m_metrics.clientsDenied;
            send(from, m_writer.connectDenied({}, wire::DenyReason::ServerFull));
            spdlog::info("denied {}: server full ({} clients)", from.toString(), m_sessions.size());
            return;
        }
        Session session(m_config.maxBaselineAgeTicks);
        session.clientId = m_nextClientId++;
        const auto* name = message->client_name();
        session.name = name ? name->str() : std::string();
        session.catalogueSent.assign(kCatalogueRing, {});
        // The rate asked for, rounded down to one the tick rate divides into whole ticks.
        session.ticksPerSnapshot = m_ticksPerSnapshot;
        if (const int wanted = message->snapshot_rate_hz(); wanted > 0)
        {
            session.ticksPerSnapshot = std::clamp((m_config.tickRateHz + wanted - 1) / wanted, 1, m_config.tickRateHz);
        }
        session.inputTokens = m_config.maxInputBurst;
        session.inputTokenTime = now;
        session.spectator = message->spectator();
        for (std::uint32_t id = 0; id < m_catalogue.size(); ++id)
        {
            if (m_catalogue[id].version != 0 && !m_catalogue[id].entry.removed)
            {
                session.catalogueDirty.emplace(id, PendingCatalogue{});
            }
        }
        it = m_sessions.emplace(from, std::move(session)).first;
        ++m_metrics.clientsAccepted;
        spdlog::info("client {} ({}, {}) joined room '{}'; {} client(s)", it->second.clientId, it->second.name,
                     from.toString(), m_config.room, m_sessions.size());
        if (!it->second.spectator)
        {
            spawnFor(it->second, nullptr);
        }
        if (m_sessionObserver)
        {
            m_sessionObserver(from, true);
        }
    }
    // Repeated responses get the same answer: the first reply may have been lost.
    Session& session = it->second;
    session.acks.onReceived(packet.header()->sequence());
    session.lastReceiveTime = now;
    send(from, m_writer.connectAccepted(session.acks.nextOutgoing(), sessionParameters(session)));
}

void Server::handleAcks(Session& session, const wire::PacketHeader& header)
{
    protocol::forEachAcked(header,
                           [&](std::uint16_t sequence)
                           {
                               session.snapshots.onAcked(sequence);
                               auto& [sentSequence, records] = session.catalogueSent[sequence % kCatalogueRing];
                               if (records.empty() || sentSequence != sequence)
                               {
                                   return;
                               }
                               for (const CatalogueRecord& r : records)
                               {
                                   const auto dirty = session.catalogueDirty.find(r.id);
                                   if (dirty != session.catalogueDirty.end() && r.id < m_catalogue.size() &&
                                       m_catalogue[r.id].version == r.version)
                                   {
                                       session.catalogueDirty.erase(dirty);
                                   }
                               }
                               records.clear();
                           });
}

bool Server::firstTimeInput(Session& session, std::uint32_t sequence)
{
    constexpr std::uint32_t kWindow = 1024;
    if (sequence > session.newestInputSequence)
    {
        const std::uint32_t advance = sequence - session.newestInputSequence;
        if (advance >= kWindow)
        {
            session.inputsSeen.reset();
        }
        else
        {
            for (std::uint32_t s = session.newestInputSequence + 1; s < sequence; ++s)
            {
                session.inputsSeen.reset(s % kWindow);
            }
        }
        session.newestInputSequence = sequence;
        session.inputsSeen.set(sequence % kWindow);
        return true;
    }
    if (session.newestInputSequence - sequence >= kWindow || session.inputsSeen.test(sequence % kWindow))
    {
        return false;
    }
    session.inputsSeen.set(sequence % kWindow);
    return true;
}

void Server::handleInputs(Session& session, const wire::ClientInput& message, double now)
{
    protocol::readInputs(message, m_inputScratch); // each already range-checked by decodePacket
    session.inputTokens = std::min(m_config.maxInputBurst,
                                   session.inputTokens + (now - session.inputTokenTime) * m_config.maxInputsPerSecond);
    session.inputTokenTime = now;
    for (const protocol::InputCommand& input : m_inputScratch)
    {
        ++m_metrics.inputsReceived;
        if (!firstTimeInput(session, input.sequence))
        {
            ++m_metrics.inputsDuplicate;
            continue;
        }
        if (session.inputTokens < 1.0)
        {
            ++m_metrics.inputsRateLimited;
            continue;
        }
        session.inputTokens -= 1.0;
        const bool spawnKind = input.kind == wire::InputKind::Spawn || input.kind == wire::InputKind::Remove;
        if ((spawnKind && !m_config.allowClientSpawn) ||
            (input.kind != wire::InputKind::Spawn && !ownsBody(session, {input.bodyId, input.bodyGeneration})))
        {
            ++m_metrics.inputsNotOwned;
            spdlog::debug("refused input {} of client {}: {}", input.sequence, session.clientId,
                          spawnKind && !m_config.allowClientSpawn ? "spawning not allowed here" : "body not owned");
            continue;
        }
        if (input.tick > m_metrics.ticks + static_cast<std::uint64_t>(m_config.maxInputLeadTicks) ||
            m_inputQueue.size() >= static_cast<std::size_t>(m_config.maxQueuedInputs))
        {
            ++m_metrics.inputsRefused;
            continue;
        }
        std::uint64_t tick = input.tick;
        if (tick <= m_metrics.ticks)
        {
            ++m_metrics.inputsLate; // its tick already ran: the next one takes it
            tick = m_metrics.ticks + 1;
        }
        m_inputQueue.emplace(tick, QueuedInput{session.clientId, input});
    }
}

void Server::applyInputs(std::uint64_t tick)
{
    while (!m_inputQueue.empty() && m_inputQueue.begin()->first <= tick)
    {
        const QueuedInput queued = m_inputQueue.begin()->second;
        m_inputQueue.erase(m_inputQueue.begin());
        const protocol::InputCommand& in = queued.input;
        const physics::BodyId id{in.bodyId, in.bodyGeneration};
        const physics::Vec3 v{in.vector[0], in.vector[1], in.vector[2]};
        physics::WorldStatus status = physics::WorldStatus::StaleBodyId;
        physics::BodyState body;
        Session* session = findSession(queued.clientId);
        if (session == nullptr)
        {
            status = physics::WorldStatus::StaleBodyId; // the client left before its tick
        }
        else if (in.kind == wire::InputKind::Spawn)
        {
            const protocol::PositionQuantization& q = m_config.quantization;
            const bool inside = v.x >= q.boundsMin[0] && v.x <= q.boundsMax[0] && v.y >= q.boundsMin[1] &&
                                v.y <= q.boundsMax[1] && v.z >= q.boundsMin[2] && v.z <= q.boundsMax[2];
            status = inside && spawnFor(*session, &v) ? physics::WorldStatus::Ok : physics::WorldStatus::InvalidBodyDesc;
        }
        else if (!ownsBody(*session, id))
        {
            status = physics::WorldStatus::StaleBodyId; // removed since it was queued
        }
        else if (in.kind == wire::InputKind::Remove)
        {
            status = m_world.destroyBody(id);
            if (status == physics::WorldStatus::Ok)
            {
                ++m_metrics.bodiesRemoved;
                std::erase(session->owned, id);
            }
        }
        else if (m_world.getBody(id, body))
        {
            switch (in.kind)
            {
            case wire::InputKind::Force:
                status = m_world.applyCentralForce(id, v);
                break;
            case wire::InputKind::Impulse:
                status = m_world.applyImpulse(id, v, body.centerOfMass);
                break;
            case wire::InputKind::Torque:
                status = m_world.applyTorque(id, v);
                break;
            case wire::InputKind::TargetVelocity:
                status = body.type == physics::BodyType::Static ? physics::WorldStatus::WrongBodyType
                                                                : m_world.setVelocity(id, v, body.angularVelocity);
                break;
            case wire::InputKind::Spawn:
            case wire::InputKind::Remove:
                break;
            }
        }
        ++(status == physics::WorldStatus::Ok ? m_metrics.inputsApplied : m_metrics.inputsFailed);
        if (m_inputObserver)
        {
            m_inputObserver(AppliedInput{queued.clientId, in, tick, status});
        }
    }
}

void Server::update(double now)
{
    m_now = now;
    if (!m_started)
    {
        m_started = true;
        m_nextTickTime = now;
    }
    const double interval = m_tickSeconds / m_timeScale; // real seconds per tick
    int ran = 0;
    while (m_nextTickTime <= now)
    {
        if (ran == m_config.maxCatchUpTicks)
        {
            // Too far behind: drop the debt instead of spiralling.
            ++m_metrics.overruns;
            m_nextTickTime = now + interval;
            break;
        }
        if (m_paused && m_stepBudget == 0)
        {
            ++m_metrics.pausedTicks;
        }
        else
        {
            m_stepBudget -= m_paused ? 1 : 0;
            tick(now);
        }
        m_nextTickTime += interval;
        ++ran;
    }
    if (m_paused)
    {
        keepAlivePaused(now);
    }

    for (auto it = m_sessions.begin(); it != m_sessions.end();)
    {
        auto next = std::next(it);
        if (now - it->second.lastReceiveTime > m_config.clientTimeoutSeconds)
        {
            ++m_metrics.clientsTimedOut;
            send(it->first, m_writer.disconnect(it->second.acks.nextOutgoing(), wire::DisconnectReason::TimedOut));
            endSession(it, "timed out");
        }
        it = next;
    }
}

void Server::keepAlivePaused(double now)
{
    // No ticks, so no snapshots: keep the clients' connections alive once a second.
    for (auto& [address, session] : m_sessions)
    {
        if (now - session.lastKeepAliveTime >= 1.0)
        {
            session.lastKeepAliveTime = now;
            send(address, m_writer.keepAlive(session.acks.nextOutgoing(), now));
        }
    }
}

void Server::tick(double now)
{
    const double started = m_profileClock ? m_profileClock() : 0.0;
    runTick(now);
    if (m_profileClock)
    {
        m_metrics.tickSeconds.observe(m_profileClock() - started);
    }
}

void Server::runTick(double now)
{
    const std::uint64_t next = m_metrics.ticks + 1;
    if (m_preStep)
    {
        m_preStep(next);
    }
    applyInputs(next);
    m_world.step(static_cast<float>(m_tickSeconds));
    m_metrics.ticks = next;
    refreshCatalogue();
    for (auto& [address, session] : m_sessions)
    {
        sendCatalogue(address, session, now);
    }
    bool captured = false;
    m_sharedEncodings.clear();
    for (auto& [address, session] : m_sessions)
    {
        if (m_metrics.ticks % static_cast<std::uint64_t>(session.ticksPerSnapshot) != 0)
        {
            continue;
        }
        if (!captured)
        {
            captureSnapshot();
            captured = true;
        }
        sendSnapshot(address, session);
    }
}

namespace
{
protocol::CatalogueEntry catalogueEntryOf(const physics::BodyState& body, std::span<const physics::ConvexHull> hulls)
{
    protocol::CatalogueEntry out;
    out.id = body.id.index;
    out.generation = body.id.generation;
    const physics::Shape& shape = body.shape;
    out.shape = static_cast<wire::ShapeKind>(shape.type);
    switch (shape.type)
    {
    case physics::ShapeType::Sphere:
        out.extent = {shape.sphere.radius, shape.sphere.radius, shape.sphere.radius};
        break;
    case physics::ShapeType::Capsule:
        out.extent = {shape.capsule.radius, shape.capsule.halfHeight, shape.capsule.radius};
        break;
    case physics::ShapeType::Box:
        out.extent = {shape.box.halfExtents.x, shape.box.halfExtents.y, shape.box.halfExtents.z};
        break;
    case physics::ShapeType::Hull:
        if (shape.hullIndex < hulls.size())
        {
            // Half extents of the hull's local bounding box (the vertices themselves are not sent yet).
            physics::Vec3 lo{0, 0, 0}, hi{0, 0, 0};
            bool first = true;
            for (const physics::Vec3& v : hulls[shape.hullIndex].vertices)
            {
                lo = first ? v : physics::Vec3{std::min(lo.x, v.x), std::min(lo.y, v.y), std::min(lo.z, v.z)};
                hi = first ? v : physics::Vec3{std::max(hi.x, v.x), std::max(hi.y, v.y), std::max(hi.z, v.z)};
                first = false;
            }
            out.extent = {0.5f * (hi.x - lo.x), 0.5f * (hi.y - lo.y), 0.5f * (hi.z - lo.z)};
        }
        break;
    case physics::ShapeType::Plane:
        break;
    }
    for (float& e : out.extent)
    {
        e = std::isfinite(e) ? std::clamp(e, 0.0f, protocol::kMaxShapeExtentMeters) : 0.0f;
    }
    return out;
}
} // namespace

void Server::refreshCatalogue()
{
    // One pass over the bodies: a new (id, generation) or a changed shape bumps the slot's version, a slot
    // not seen this pass lost its body. Each change marks the id dirty for every session.
    const std::uint64_t pass = m_metrics.ticks;
    auto markDirty = [&](std::uint32_t id)
    {
        for (auto& [address, session] : m_sessions)
        {
            session.catalogueDirty[id]; // keeps sentVersion/sentTime if already pending: resent as due
        }
    };
    const std::span<const physics::ConvexHull> hulls = m_world.hulls();
    m_world.forEachBody(
        [&](const physics::BodyState& body)
        {
            const std::uint32_t id = body.id.index;
            if (id >= m_catalogue.size())
            {
                m_catalogue.resize(static_cast<std::size_t>(id) + 1);
            }
            CatalogueSlot& slot = m_catalogue[id];
            slot.seenTick = pass;
            if (slot.version != 0 && slot.entry.generation == body.id.generation && !slot.entry.removed)
            {
                return; // shapes of live bodies do not change
            }
            slot.entry = catalogueEntryOf(body, hulls);
            slot.version = ++m_catalogueVersion;
            markDirty(id);
        });
    for (std::uint32_t id = 0; id < m_catalogue.size(); ++id)
    {
        CatalogueSlot& slot = m_catalogue[id];
        if (slot.version != 0 && slot.seenTick != pass && !slot.entry.removed)
        {
            slot.entry.removed = true;
            slot.version = ++m_catalogueVersion;
            markDirty(id);
        }
    }
}

void Server::sendCatalogue(const protocol::Address& to, Session& session, double now)
{
    int datagrams = 0;
    auto it = session.catalogueDirty.begin();
    while (it != session.catalogueDirty.end() && datagrams < m_config.maxCatalogueDatagramsPerTick)
    {
        m_catalogueScratch.clear();
        std::vector<CatalogueRecord> records;
        for (; it != session.catalogueDirty.end() && m_catalogueScratch.size() < protocol::kMaxCatalogueEntriesPerDatagram;
             ++it)
        {
            const CatalogueSlot& slot = m_catalogue[it->first];
            PendingCatalogue& pending = it->second;
            const bool due = pending.sentVersion != slot.version || now - pending.sentTime >= m_config.catalogueResendSeconds;
            if (!due)
            {
                continue;
            }
            m_metrics.catalogueEntriesResent += pending.sentVersion == slot.version ? 1 : 0;
            pending.sentVersion = slot.version;
            pending.sentTime = now;
            m_catalogueScratch.push_back(slot.entry);
            m_catalogueScratch.back().owned =
                !slot.entry.removed && ownsBody(session, {slot.entry.id, slot.entry.generation});
            records.push_back({it->first, slot.version});
        }
        if (m_catalogueScratch.empty())
        {
            break;
        }
        const protocol::HeaderFields header = session.acks.nextOutgoing();
        send(to, m_writer.catalogue(header, m_catalogueScratch));
        ++m_metrics.catalogueDatagrams;
        m_metrics.catalogueEntriesSent += m_catalogueScratch.size();
        session.catalogueSent[header.sequence % kCatalogueRing] = {header.sequence, std::move(records)};
        ++datagrams;
    }
}

void Server::captureSnapshot()
{
    std::vector<protocol::QuantizedBody>& bodies = m_history.begin(m_metrics.ticks);
    m_world.forEachBody(
        [&](const physics::BodyState& body)
        {
            const physics::Transform& xf = body.transform;
            const bool atRest = body.type == physics::BodyType::Static || body.sleeping ||
                                (lengthSquared(body.linearVelocity) < 1e-6f &&
                                 lengthSquared(body.angularVelocity) < 1e-6f);
            bodies.push_back(protocol::quantizeBody(m_codec.position, body.id.index, body.id.generation, atRest,
                                                    {xf.p.x, xf.p.y, xf.p.z}, {xf.q.x, xf.q.y, xf.q.z, xf.q.w}));
        });
    m_history.commit(); // forEachBody visits slots in increasing order: sorted by id
}

namespace
{
/// How much a changed body matters to a client this snapshot (Fiedler's priority accumulator adds it up
/// while the body waits): its own bodies first, then new ones, then moving ones, then ones coming to rest.
float snapshotPriority(const protocol::QuantizedBody& body, bool owned, bool created)
{
    if (owned)
    {
        return 1000.0f;
    }
    if (created)
    {
        return 100.0f;
    }
    return body.atRest ? 2.0f : 10.0f;
}

/// Rough coded size of a snapshot's fixed parts (slice headers, envelopes), bytes.
constexpr double kSnapshotOverheadBytes = 80.0;
/// Frames of its own kept per budgeted client: baselines older than this many ticks are not used.
constexpr std::uint32_t kBudgetHistoryTicks = 64;
} // namespace

bool Server::composeBudgeted(Session& session, const protocol::SnapshotFrame& current,
                             const protocol::SnapshotFrame* baseline)
{
    std::vector<protocol::QuantizedBody>& out = session.composite;
    out.clear();
    if (baseline == nullptr)
    {
        // Nothing held: the client needs every body once (the bucket goes into debt if it must).
        out.assign(current.bodies.begin(), current.bodies.end());
        return true;
    }
    // Walk both frames by id: unchanged bodies and removals always go in (they cost next to nothing), changed
    // and new ones compete for the bytes left.
    struct Candidate
    {
        std::uint32_t currentIndex;
        float priority;
        bool owned;
    };
    static thread_local std::vector<Candidate> candidates;
    candidates.clear();
    const auto cur = current.bodies;
    const auto base = baseline->bodies;
    std::size_t i = 0, j = 0;
    if (!cur.empty() && session.priority.size() <= cur.back().id)
    {
        session.priority.resize(static_cast<std::size_t>(cur.back().id) + 1, 0.0f);
    }
    while (i < cur.size())
    {
        while (j < base.size() && base[j].id < cur[i].id)
        {
            ++j; // removed since the baseline: left out, so the client learns it
        }
        const bool kept = j < base.size() && base[j].id == cur[i].id && base[j].generation == cur[i].generation;
        if (kept && base[j].sameState(cur[i]))
        {
            session.priority[cur[i].id] = 0.0f;
        }
        else
        {
            const bool owned = ownsBody(session, {cur[i].id, cur[i].generation});
            float& accumulated = session.priority[cur[i].id];
            accumulated += snapshotPriority(cur[i], owned, !kept);
            candidates.push_back({static_cast<std::uint32_t>(i), accumulated, owned});
        }
        ++i;
    }
    const double available = session.budgetTokens - kSnapshotOverheadBytes;
    std::size_t take = candidates.size();
    if (static_cast<double>(take) * session.bytesPerChangedBody > available)
    {
        take = available > 0.0 ? static_cast<std::size_t>(available / session.bytesPerChangedBody) : 0;
        // The client's own bodies always go (a few bytes; the bucket pays them back later), then the rest by
        // accumulated priority.
        std::stable_sort(candidates.begin(), candidates.end(),
                         [](const Candidate& a, const Candidate& b)
                         { return a.owned != b.owned ? a.owned : a.priority > b.priority; });
        while (take < candidates.size() && candidates[take].owned)
        {
            ++take;
        }
        ++m_metrics.budgetLimitedSnapshots;
        m_metrics.bodiesDeferred += candidates.size() - take;
    }
    static thread_local std::vector<std::uint8_t> chosen;
    chosen.assign(cur.size(), 0);
    for (std::size_t k = 0; k < take; ++k)
    {
        chosen[candidates[k].currentIndex] = 1;
        session.priority[cur[candidates[k].currentIndex].id] = 0.0f;
    }
    // The composite: chosen and unchanged bodies as they are now, deferred ones as the client has them.
    j = 0;
    for (i = 0; i < cur.size(); ++i)
    {
        while (j < base.size() && base[j].id < cur[i].id)
        {
            ++j;
        }
        const bool kept = j < base.size() && base[j].id == cur[i].id && base[j].generation == cur[i].generation;
        if (kept && base[j].sameState(cur[i]))
        {
            out.push_back(cur[i]);
        }
        else if (chosen[i])
        {
            out.push_back(cur[i]);
        }
        else if (kept)
        {
            out.push_back(base[j]); // deferred: unchanged for the client
        }
        else if (j < base.size() && base[j].id == cur[i].id)
        {
            out.push_back(base[j]); // a replaced body deferred: the old one stays a little longer
        }
        // else: a new body deferred: not in this snapshot
    }
    return take == candidates.size();
}

void Server::sendSnapshot(const protocol::Address& to, Session& session)
{
    const protocol::SnapshotFrame* current = m_history.newest();
    if (current == nullptr)
    {
        return;
    }
    const bool budgeted = m_config.maxClientKbps > 0;
    const protocol::SnapshotHistory* history = &m_history;
    if (budgeted)
    {
        const double rate = m_config.maxClientKbps * 1000.0 / 8.0; // bytes per second
        if (!session.sentFrames)
        {
            session.sentFrames = std::make_unique<protocol::SnapshotHistory>(kBudgetHistoryTicks);
            session.budgetTokens = rate * m_config.budgetBurstSeconds;
            session.budgetTime = m_now;
        }
        session.budgetTokens =
            std::min(rate * m_config.budgetBurstSeconds, session.budgetTokens + rate * (m_now - session.budgetTime));
        session.budgetTime = m_now;
        history = session.sentFrames.get();
    }
    const protocol::SnapshotFrame* baseline = nullptr;
    const protocol::SnapshotFrame* reference = nullptr;
    session.snapshots.choose(*history, current->tick, baseline, reference);
    bool exact = true; // the frames involved are the simulation's own: the encoding can be shared
    if (budgeted)
    {
        // The slot of the frame about to be kept must not be one of these.
        if (reference && current->tick - reference->tick >= kBudgetHistoryTicks)
        {
            reference = nullptr;
        }
        if (baseline && current->tick - baseline->tick >= kBudgetHistoryTicks)
        {
            baseline = nullptr;
            reference = nullptr;
        }
        if (baseline == nullptr)
        {
            // The client's own frames are kept for kBudgetHistoryTicks only. A tick it holds that is older
            // (after an outage, say) is still a baseline if it was sent exactly as simulated: then the
            // simulation's history has the same frame, for up to maxBaselineAgeTicks.
            const protocol::SnapshotFrame* simBaseline = nullptr;
            const protocol::SnapshotFrame* simReference = nullptr;
            session.snapshots.choose(m_history, current->tick, simBaseline, simReference);
            if (simBaseline && !session.deviatedTicks.count(simBaseline->tick))
            {
                baseline = simBaseline;
                reference = simReference && !session.deviatedTicks.count(simReference->tick) ? simReference : nullptr;
            }
        }
        // What this client is sent is kept as its own frame (with the history's unchanged-since hints): it
        // is the baseline once acknowledged. A frame skipped below is never held, so never a baseline.
        const bool composedExact = composeBudgeted(session, *current, baseline);
        std::vector<protocol::QuantizedBody>& kept = session.sentFrames->begin(current->tick);
        kept.assign(session.composite.begin(), session.composite.end());
        session.sentFrames->commit();
        auto& deviated = session.deviatedTicks;
        while (!deviated.empty() && *deviated.begin() + m_config.maxBaselineAgeTicks < current->tick)
        {
            deviated.erase(deviated.begin());
        }
        if (!composedExact)
        {
            deviated.insert(current->tick);
        }
        exact = composedExact && (!baseline || !deviated.count(baseline->tick)) &&
                (!reference || !deviated.count(reference->tick));
        if (exact)
        {
            // The same bodies as the simulation's frames: encode (or reuse) from those.
            baseline = baseline ? m_history.find(baseline->tick) : nullptr;
            reference = reference && baseline ? m_history.find(reference->tick) : nullptr;
        }
        else
        {
            current = session.sentFrames->newest();
        }
    }
    if (baseline == nullptr && session.snapshots.sentAny &&
        static_cast<double>(current->tick - session.lastFullTick) * m_tickSeconds < m_config.fullSnapshotResendSeconds)
    {
        // The client holds nothing yet and a full snapshot is on its way: do not flood it with more.
        ++m_metrics.snapshotsSkipped;
        return;
    }
    const EncodingKey key{current->tick, baseline ? baseline->tick : 0, reference ? reference->tick : 0};
    const SharedEncoding* shared = nullptr;
    if (exact)
    {
        if (const auto found = m_sharedEncodings.find(key); found != m_sharedEncodings.end())
        {
            shared = &found->second;
        }
    }
    if (shared == nullptr)
    {
        const double start = m_profileClock ? m_profileClock() : 0.0;
        const protocol::CodecError error = m_encoder.encode(*current, baseline, reference);
        ++m_metrics.snapshotEncodes;
        if (m_profileClock)
        {
            m_metrics.encodeSeconds += m_profileClock() - start;
        }
        if (error != protocol::CodecError::None)
        {
            ++m_metrics.snapshotEncodeErrors;
            spdlog::error("snapshot {} for client {}: encoder refused: {}", current->tick, session.clientId,
                          protocol::codecErrorName(error));
            return;
        }
        SharedEncoding encoding;
        encoding.identicalToBaseline = m_encoder.stats().identicalToBaseline;
        for (const protocol::EncodedSlice& slice : m_encoder.slices())
        {
            encoding.slices.emplace_back(slice.payload.begin(), slice.payload.end());
        }
        auto& slot = exact ? m_sharedEncodings[key] : m_privateEncoding;
        slot = std::move(encoding);
        shared = &slot;
    }
    protocol::SnapshotSendState& state = session.snapshots;
    if (shared->identicalToBaseline && state.sentAny &&
        current->tick - state.lastSentTick < static_cast<std::uint64_t>(m_config.idleHeartbeatTicks))
    {
        ++m_metrics.snapshotsSkipped; // the client already has this state
        return;
    }
    state.sentAny = true;
    state.lastSentTick = current->tick;
    const double serverTime = static_cast<double>(current->tick) * m_tickSeconds;
    const auto& slices = shared->slices;
    std::size_t bytes = 0;
    for (const std::vector<std::uint8_t>& payload : slices)
    {
        const protocol::HeaderFields header = session.acks.nextOutgoing();
        const auto datagram = m_writer.snapshot(header, current->tick, serverTime, payload);
        bytes += datagram.size();
        send(to, datagram);
        state.onSliceSent(current->tick, header.sequence, static_cast<std::uint32_t>(slices.size()));
        ++m_metrics.snapshotDatagrams;
    }
    if (budgeted && baseline != nullptr)
    {
        // Learn what a changed body costs this client, for the next choice (composite: what it was sent).
        std::size_t changed = 0;
        std::size_t j = 0;
        for (const protocol::QuantizedBody& body : session.composite)
        {
            while (j < baseline->bodies.size() && baseline->bodies[j].id < body.id)
            {
                ++j;
            }
            changed += (j < baseline->bodies.size() && baseline->bodies[j] == body) ? 0 : 1;
        }
        if (changed > 0)
        {
            const double perBody =
                std::max(1.0, (static_cast<double>(bytes) - kSnapshotOverheadBytes) / static_cast<double>(changed));
            session.bytesPerChangedBody = 0.7 * session.bytesPerChangedBody + 0.3 * perBody;
        }
    }
    ++m_metrics.snapshotsSent;
    m_metrics.fullSnapshots += baseline == nullptr ? 1 : 0;
    if (baseline == nullptr)
    {
        session.lastFullTick = current->tick;
    }
}

void Server::shutdown(double /*now*/)
{
    for (int repeat = 0; repeat < 3; ++repeat)
    {
        for (auto& [address, session] : m_sessions)
        {
            send(address, m_writer.disconnect(session.acks.nextOutgoing(), wire::DisconnectReason::ServerShutdown));
        }
    }
    while (!m_sessions.empty())
    {
        endSession(m_sessions.begin(), "told the server is shutting down");
    }
}

bool Server::kick(std::uint32_t clientId, double /*now*/)
{
    protocol::Address address;
    Session* session = findSession(clientId, &address);
    if (session == nullptr)
    {
        return false;
    }
    for (int repeat = 0; repeat < 3; ++repeat)
    {
        send(address, m_writer.disconnect(session->acks.nextOutgoing(), wire::DisconnectReason::Kicked));
    }
    ++m_metrics.clientsKicked;
    endSession(m_sessions.find(address), "kicked");
    return true;
}

void Server::resetWorld(physics::World&& world)
{
    // Bodies of the old world are gone: owners forget them, queued inputs are void, and every catalogue
    // slot is rewritten (a new body may reuse an old id and generation with another shape).
    m_world = std::move(world);
    m_inputQueue.clear();
    for (CatalogueSlot& slot : m_catalogue)
    {
        if (slot.version != 0 && !slot.entry.removed)
        {
            slot.entry.removed = true;
            slot.version = ++m_catalogueVersion;
        }
    }
    for (std::uint32_t id = 0; id < m_catalogue.size(); ++id)
    {
        if (m_catalogue[id].version != 0)
        {
            for (auto& [address, session] : m_sessions)
            {
                session.catalogueDirty[id];
            }
        }
    }
    for (auto& [address, session] : m_sessions)
    {
        session.owned.clear();
        if (!session.spectator)
        {
            spawnFor(session, nullptr);
        }
    }
    refreshCatalogue();
}

AdminResult Server::admin(const protocol::AdminCommandFields& command, double now)
{
    ++m_metrics.adminCommands;
    AdminResult result;
    result.ok = true;
    switch (command.op)
    {
    case wire::AdminOp::Status:
        break;
    case wire::AdminOp::Pause:
        m_paused = true;
        m_stepBudget = 0;
        break;
    case wire::AdminOp::Resume:
        m_paused = false;
        m_stepBudget = 0;
        break;
    case wire::AdminOp::Step:
        if (!m_paused || command.count < 1 || command.count > 3600)
        {
            return {false, m_paused ? "step needs a count of 1..3600" : "step needs the room paused first"};
        }
        m_stepBudget += command.count;
        break;
    case wire::AdminOp::Reset:
    case wire::AdminOp::LoadScene:
    {
        ServerConfig config = m_config;
        if (command.op == wire::AdminOp::LoadScene)
        {
            if (command.text.empty())
            {
                return {false, "load needs a scene name or file"};
            }
            config.scene = command.text;
            config.buildScene = nullptr;
        }
        physics::World fresh(m_world.config());
        fresh.setGravity(physics::WorldConfig{}.gravity); // scene files set their own
        std::string error;
        std::shared_ptr<const SceneDescription> file;
        if (!buildWorld(config, fresh, error, file))
        {
            return {false, "scene kept: " + error};
        }
        m_config.scene = config.scene;
        m_config.buildScene = config.buildScene;
        adoptSceneRules(std::move(file));
        resetWorld(std::move(fresh));
        break;
    }
    case wire::AdminOp::SetGravity:
        for (const float g : command.vector)
        {
            if (!std::isfinite(g) || std::fabs(g) > 1000.0f)
            {
                return {false, "gravity components must be within 1000 m/s^2"};
            }
        }
        m_world.setGravity({command.vector[0], command.vector[1], command.vector[2]});
        break;
    case wire::AdminOp::SetTimeScale:
        if (!(command.value >= 0.01f && command.value <= 16.0f))
        {
            return {false, "time scale must be 0.01..16"};
        }
        m_timeScale = command.value;
        m_nextTickTime = std::min(m_nextTickTime, now + m_tickSeconds / m_timeScale);
        break;
    case wire::AdminOp::Kick:
        if (!kick(command.count, now))
        {
            return {false, "no client " + std::to_string(command.count) + " in room '" + m_config.room + "'"};
        }
        break;
    }
    result.message = "room '" + m_config.room + "' scene '" + m_config.scene + "' tick " +
                     std::to_string(m_metrics.ticks) + ", " + std::to_string(m_world.bodyCount()) + " bodies, " +
                     std::to_string(m_sessions.size()) + " clients, " + (m_paused ? "paused" : "running") +
                     ", time scale " + std::to_string(m_timeScale).substr(0, 4);
    spdlog::info("admin {}: {}", wire::EnumNameAdminOp(command.op), result.message);
    return result;
}

namespace
{
constexpr std::uint32_t kRoomStateMagic = 0x4d4f4f52u; // "ROOM"
constexpr std::uint32_t kRoomStateVersion = 1;

template <class T> void put(std::vector<std::uint8_t>& out, const T& value)
{
    const auto* bytes = reinterpret_cast<const std::uint8_t*>(&value);
    out.insert(out.end(), bytes, bytes + sizeof(T));
}

template <class T> bool take(std::span<const std::uint8_t>& in, T& value)
{
    if (in.size() < sizeof(T))
    {
        return false;
    }
    std::memcpy(&value, in.data(), sizeof(T));
    in = in.subspan(sizeof(T));
    return true;
}
} // namespace

void Server::saveState(std::vector<std::uint8_t>& out) const
{
    put(out, kRoomStateMagic);
    put(out, kRoomStateVersion);
    put(out, m_metrics.ticks);
    put(out, m_spawnCount);
    put(out, static_cast<std::uint8_t>(m_paused ? 1 : 0));
    put(out, m_timeScale);
    std::vector<std::uint8_t> world;
    m_world.saveState(world);
    put(out, static_cast<std::uint64_t>(world.size()));
    out.insert(out.end(), world.begin(), world.end());
}

bool Server::restoreState(std::span<const std::uint8_t> data, std::string& error)
{
    std::uint32_t magic = 0, version = 0, spawnCount = 0;
    std::uint64_t ticks = 0, worldBytes = 0;
    std::uint8_t paused = 0;
    double timeScale = 0.0;
    if (!take(data, magic) || !take(data, version) || !take(data, ticks) || !take(data, spawnCount) ||
        !take(data, paused) || !take(data, timeScale) || !take(data, worldBytes))
    {
        error = "room state truncated";
        return false;
    }
    if (magic != kRoomStateMagic || version != kRoomStateVersion)
    {
        error = "not a room state of this version";
        return false;
    }
    if (paused > 1 || !(timeScale >= 0.01 && timeScale <= 16.0) || worldBytes != data.size())
    {
        error = "room state corrupt (flags, time scale or size)";
        return false;
    }
    if (!m_sessions.empty())
    {
        error = "room has clients: restore before any connect";
        return false;
    }
    const physics::RestoreStatus status = m_world.restoreState(data);
    if (status != physics::RestoreStatus::Ok)
    {
        error = "world state refused (status " + std::to_string(static_cast<int>(status)) + ")";
        return false;
    }
    m_metrics.ticks = ticks;
    m_spawnCount = spawnCount;
    m_paused = paused != 0;
    m_timeScale = timeScale;
    m_inputQueue.clear();
    for (CatalogueSlot& slot : m_catalogue)
    {
        if (slot.version != 0 && !slot.entry.removed)
        {
            slot.entry.removed = true;
            slot.version = ++m_catalogueVersion;
        }
    }
    refreshCatalogue();
    return true;
}

} // namespace polytope::server
