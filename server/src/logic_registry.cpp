// polytope-server: the registry of room logics by name (room_logic.h).
#include "polytope/server/room_logic.h"

#include <map>
#include <mutex>

namespace polytope::server
{
namespace
{
struct Registry
{
    std::mutex mutex;
    std::map<std::string, LogicFactory, std::less<>> factories;
};

Registry& registry()
{
    static Registry instance;
    return instance;
}
} // namespace

void registerLogic(std::string name, LogicFactory factory)
{
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    r.factories[std::move(name)] = std::move(factory);
}

bool logicRegistered(std::string_view name)
{
    Registry& r = registry();
    const std::lock_guard lock(r.mutex);
    return r.factories.find(name) != r.factories.end();
}

std::unique_ptr<RoomLogic> makeLogic(const LogicSpec& spec, std::string& error)
{
    LogicFactory factory;
    {
        Registry& r = registry();
        const std::lock_guard lock(r.mutex);
        const auto found = r.factories.find(spec.name);
        if (found == r.factories.end())
        {
            error = "no room logic named '" + spec.name + "' is registered";
            return nullptr;
        }
        factory = found->second;
    }
    std::string why;
    std::unique_ptr<RoomLogic> logic = factory(spec, why);
    if (!logic)
    {
        error = "logic '" + spec.name + "': " + (why.empty() ? std::string("its factory refused") : why);
    }
    return logic;
}

} // namespace polytope::server
