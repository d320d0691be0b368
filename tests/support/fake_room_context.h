// Tests: a RoomContext without a room (room_logic.h), over a real physics::World, for testing a RoomLogic
// alone: the clients, owned bodies and states are plain containers; kicks and log lines are recorded;
// castRayAsSeen casts against the world as it is now and reports `rewindStatus`.
#pragma once

#include "polytope/server/room_logic.h"

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

namespace polytope::test
{

class FakeRoomContext final : public server::RoomContext
{
  public:
    struct Client
    {
        std::uint32_t id = 0;
        std::string name;
        bool spectator = false;
        std::vector<physics::BodyId> owned;
        std::vector<std::uint8_t> state;
    };

    physics::World physicsWorld;
    std::string name = "test-room";
    std::uint64_t currentTick = 1;
    double seconds = 1.0 / 60.0;
    std::string settingsText = "{}";
    std::vector<Client> clients;
    std::vector<std::uint8_t> publicState;
    std::vector<std::string> logLines;
    std::vector<std::pair<std::uint32_t, std::string>> kicks;
    server::RewindStatus rewindStatus = server::RewindStatus::Exact;
    server::ViewTime lastView;
    std::size_t maxBodiesPerClient = 8;
    bool throwOnKick = false; ///< kick throws std::runtime_error("the room refused: kick")

    Client& addClient(std::uint32_t id, std::string clientName, bool spectator = false)
    {
        clients.push_back({id, std::move(clientName), spectator, {}, {}});
        return clients.back();
    }
    Client* find(std::uint32_t id)
    {
        const auto it =
            std::find_if(clients.begin(), clients.end(), [id](const Client& c) { return c.id == id; });
        return it == clients.end() ? nullptr : &*it;
    }
    const Client* find(std::uint32_t id) const { return const_cast<FakeRoomContext*>(this)->find(id); }
    static server::ClientInfo infoOf(const Client& c) { return {c.id, c.name, c.spectator}; }

    std::string_view roomName() const override { return name; }
    std::uint64_t tick() const override { return currentTick; }
    double tickSeconds() const override { return seconds; }
    physics::World& world() override { return physicsWorld; }
    std::string_view settings() const override { return settingsText; }

    std::size_t clientCount() const override { return clients.size(); }
    server::ClientInfo clientAt(std::size_t index) const override { return infoOf(clients.at(index)); }
    server::ClientInfo client(std::uint32_t clientId) const override
    {
        const Client* c = find(clientId);
        return c != nullptr ? infoOf(*c) : server::ClientInfo{};
    }
    std::span<const physics::BodyId> ownedBodies(std::uint32_t clientId) const override
    {
        const Client* c = find(clientId);
        return c != nullptr ? std::span<const physics::BodyId>(c->owned) : std::span<const physics::BodyId>();
    }
    Client* ownerOf(physics::BodyId body)
    {
        for (Client& c : clients)
        {
            if (std::find(c.owned.begin(), c.owned.end(), body) != c.owned.end())
            {
                return &c;
            }
        }
        return nullptr;
    }
    bool giveBody(std::uint32_t clientId, physics::BodyId body) override
    {
        Client* c = find(clientId);
        if (c == nullptr || !physicsWorld.isValid(body) || ownerOf(body) != nullptr ||
            c->owned.size() >= maxBodiesPerClient)
        {
            return false;
        }
        c->owned.push_back(body);
        return true;
    }
    bool takeBody(physics::BodyId body) override
    {
        Client* c = ownerOf(body);
        if (c == nullptr)
        {
            return false;
        }
        c->owned.erase(std::find(c->owned.begin(), c->owned.end(), body));
        return true;
    }
    physics::BodyId spawnPlayer(std::uint32_t clientId, const physics::Vec3* at = nullptr) override
    {
        if (find(clientId) == nullptr)
        {
            return {};
        }
        physics::BodyDesc desc;
        desc.shape = physics::Shape::makeSphere(0.5f);
        desc.transform.p = at != nullptr ? *at : physics::Vec3{0.0f, 1.0f, 0.0f};
        const physics::BodyId id = physicsWorld.createBody(desc).id;
        if (!id.isNull() && !giveBody(clientId, id))
        {
            physicsWorld.destroyBody(id);
            return {};
        }
        return id;
    }
    bool kick(std::uint32_t clientId, std::string_view reason) override
    {
        if (throwOnKick)
        {
            throw std::runtime_error("the room refused: kick");
        }
        if (find(clientId) == nullptr)
        {
            return false;
        }
        kicks.emplace_back(clientId, std::string(reason));
        return true;
    }

    bool setRoomState(std::span<const std::uint8_t> state) override
    {
        if (state.size() > server::kMaxGameStateBytes)
        {
            return false;
        }
        publicState.assign(state.begin(), state.end());
        return true;
    }
    bool setClientState(std::uint32_t clientId, std::span<const std::uint8_t> state) override
    {
        Client* c = find(clientId);
        if (c == nullptr || state.size() > server::kMaxGameStateBytes)
        {
            return false;
        }
        c->state.assign(state.begin(), state.end());
        return true;
    }
    std::span<const std::uint8_t> roomState() const override { return publicState; }
    std::span<const std::uint8_t> clientState(std::uint32_t clientId) const override
    {
        const Client* c = find(clientId);
        return c != nullptr ? std::span<const std::uint8_t>(c->state) : std::span<const std::uint8_t>();
    }

    bool castRayAsSeen(const server::ViewTime& view, const physics::RayCastInput& ray,
                       const physics::QueryFilter& filter, physics::RayQueryHit& hit,
                       server::RewindStatus* status = nullptr) const override
    {
        const_cast<FakeRoomContext*>(this)->lastView = view;
        if (status != nullptr)
        {
            *status = rewindStatus;
        }
        return physicsWorld.castRayClosest(ray, filter, hit);
    }
    bool castShapeAsSeen(const server::ViewTime& view, const physics::ShapeCastInput& cast,
                         const physics::QueryFilter& filter, physics::ShapeQueryHit& hit,
                         server::RewindStatus* status = nullptr) const override
    {
        const_cast<FakeRoomContext*>(this)->lastView = view;
        if (status != nullptr)
        {
            *status = rewindStatus;
        }
        return physicsWorld.castShapeClosest(cast, filter, hit);
    }

    void log(std::string_view message) override { logLines.emplace_back(message); }

    /// The state as text (tests' scripts keep text in it).
    static std::string text(std::span<const std::uint8_t> bytes) { return {bytes.begin(), bytes.end()}; }
};

} // namespace polytope::test
