// polytope-server: the room object and the json table of Lua room logic (lua_bindings.h).
#include "lua_bindings.h"

#include "lua_sandbox.h"

#include <nlohmann/json.hpp>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <exception>
#include <limits>
#include <string>
#include <string_view>

namespace polytope::server::lua
{
namespace
{

using physics::BodyId;
using physics::Vec3;

constexpr const char* kRoomMetatable = "polytope.room";
/// json.null: a light userdata at this address.
const char kJsonNull = 0;
/// JSON nesting accepted by json.encode, json.decode and room:settings().
constexpr int kMaxJsonDepth = 64;
/// The longest line room:log hands to the room (bytes).
constexpr std::size_t kMaxLogBytes = 1024;
/// The farthest a ray may reach (metres): across the world's bound.
constexpr double kMaxRayDistance = 4.0e6;
constexpr lua_Integer kMaxUint32 = 0xFFFFFFFF;

void* jsonNull()
{
    return const_cast<char*>(&kJsonNull);
}

/// Runs a binding, turning any C++ exception into a Lua error (Lua's own errors pass through).
template <lua_CFunction F> int guarded(lua_State* L)
{
    std::string failure;
    try
    {
        return F(L);
    }
    catch (const std::exception& e)
    {
        failure = e.what();
    }
    return luaL_error(L, "%s", failure.c_str());
}

/// Argument checks of one binding; each failure raises "function: argument 'name' problem".
class Args
{
  public:
    Args(lua_State* L, const char* function) : m_L(L), m_function(function) {}

    [[noreturn]] void fail(std::string_view name, const std::string& problem) const
    {
        raiseError(m_L, m_function, "argument '" + std::string(name) + "' " + problem);
    }
    [[noreturn]] void failType(int index, std::string_view name, const char* expected) const
    {
        fail(name, std::string("must be ") + expected + " (got " + luaL_typename(m_L, index) + ")");
    }

    /// The room (argument 1), while its hook runs.
    RoomContext& room() const
    {
        auto* ref = static_cast<RoomRef*>(luaL_testudata(m_L, 1, kRoomMetatable));
        if (ref == nullptr)
        {
            raiseError(m_L, m_function,
                       "call it on the room object, as room:" + std::string(m_function) + "(...)");
        }
        if (ref->room == nullptr)
        {
            raiseError(m_L, m_function,
                       "this room object is no longer valid (it is valid during the hook it "
                       "was passed to only)");
        }
        return *ref->room;
    }

    double number(int index, std::string_view name) const
    {
        if (lua_type(m_L, index) != LUA_TNUMBER)
        {
            failType(index, name, "a number");
        }
        const double value = lua_tonumber(m_L, index);
        if (!std::isfinite(value) || std::fabs(value) > FLT_MAX)
        {
            fail(name, "must be a finite number within float range");
        }
        return value;
    }
    float real(int index, std::string_view name) const { return static_cast<float>(number(index, name)); }

    Vec3 vec3(int index, std::string_view x, std::string_view y, std::string_view z) const
    {
        return {real(index, x), real(index + 1, y), real(index + 2, z)};
    }
    Vec3 position(int index) const
    {
        const Vec3 p = vec3(index, "x", "y", "z");
        if (!physics::withinWorldBound(p))
        {
            fail("x, y, z", "must be within the world's bound (1e6 m)");
        }
        return p;
    }

    lua_Integer integer(int index, std::string_view name, lua_Integer min, lua_Integer max) const
    {
        int isInteger = 0;
        const lua_Integer value =
            lua_type(m_L, index) == LUA_TNUMBER ? lua_tointegerx(m_L, index, &isInteger) : 0;
        if (isInteger == 0)
        {
            failType(index, name, "an integer");
        }
        if (value < min || value > max)
        {
            fail(name, "must be in " + std::to_string(min) + " .. " + std::to_string(max));
        }
        return value;
    }
    std::uint32_t clientId(int index) const
    {
        return static_cast<std::uint32_t>(integer(index, "client", 1, kMaxUint32));
    }

    /// Any body id (live or not).
    BodyId bodyId(int index, std::string_view name) const
    {
        const auto packed = static_cast<std::uint64_t>(integer(
            index, name, std::numeric_limits<lua_Integer>::min(), std::numeric_limits<lua_Integer>::max()));
        return {static_cast<std::uint32_t>(packed & 0xFFFFFFFFu), static_cast<std::uint32_t>(packed >> 32)};
    }
    /// A live body of the room's world.
    BodyId body(int index, std::string_view name, const physics::World& world) const
    {
        const BodyId id = bodyId(index, name);
        if (!world.isValid(id))
        {
            fail(name, "is not a live body");
        }
        return id;
    }

    std::string_view string(int index, std::string_view name) const
    {
        if (lua_type(m_L, index) != LUA_TSTRING)
        {
            failType(index, name, "a string");
        }
        std::size_t length = 0;
        const char* text = lua_tolstring(m_L, index, &length);
        return {text, length};
    }

    /// A table argument, or none when absent and optional.
    bool table(int index, std::string_view name, bool optional) const
    {
        if (optional && lua_isnoneornil(m_L, index))
        {
            return false;
        }
        if (lua_type(m_L, index) != LUA_TTABLE)
        {
            failType(index, name, "a table");
        }
        return true;
    }

    // ---- Fields of a table at `table` (absolute index). Each pushes nothing and leaves the stack as it was.
    /// Whether the field is present (not nil); its value is then on top of the stack (pop it).
    bool field(int table, const char* key) const
    {
        if (lua_getfield(m_L, table, key) == LUA_TNIL)
        {
            lua_pop(m_L, 1);
            return false;
        }
        return true;
    }
    float realField(int table, const char* key, std::string_view name, float fallback) const
    {
        if (!field(table, key))
        {
            return fallback;
        }
        const float value = real(-1, name);
        lua_pop(m_L, 1);
        return value;
    }
    lua_Integer integerField(int table, const char* key, std::string_view name, lua_Integer min,
                             lua_Integer max, lua_Integer fallback) const
    {
        if (!field(table, key))
        {
            return fallback;
        }
        const lua_Integer value = integer(-1, name, min, max);
        lua_pop(m_L, 1);
        return value;
    }
    bool booleanField(int table, const char* key, std::string_view name, bool fallback) const
    {
        if (!field(table, key))
        {
            return fallback;
        }
        if (lua_type(m_L, -1) != LUA_TBOOLEAN)
        {
            failType(-1, name, "a boolean");
        }
        const bool value = lua_toboolean(m_L, -1) != 0;
        lua_pop(m_L, 1);
        return value;
    }
    std::string stringField(int table, const char* key, std::string_view name, const char* fallback) const
    {
        if (!field(table, key))
        {
            return fallback;
        }
        std::string value(string(-1, name));
        lua_pop(m_L, 1);
        return value;
    }
    /// A {x=, y=, z=} field.
    Vec3 vec3Field(int table, const char* key, std::string_view name, const Vec3& fallback) const
    {
        if (!field(table, key))
        {
            return fallback;
        }
        const int inner = lua_gettop(m_L);
        if (lua_type(m_L, inner) != LUA_TTABLE)
        {
            failType(inner, name, "a table {x=, y=, z=}");
        }
        const std::string prefix(name);
        const Vec3 value{realField(inner, "x", prefix + ".x", NAN), realField(inner, "y", prefix + ".y", NAN),
                         realField(inner, "z", prefix + ".z", NAN)};
        if (!physics::isFinite(value))
        {
            fail(name, "must have numbers x, y and z");
        }
        lua_pop(m_L, 1);
        return value;
    }

    lua_State* state() const { return m_L; }
    const char* function() const { return m_function; }

  private:
    lua_State* m_L;
    const char* m_function;
};

std::span<const std::uint8_t> bytesOf(std::string_view text)
{
    return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

void pushBytes(lua_State* L, std::span<const std::uint8_t> bytes)
{
    lua_pushlstring(L, reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

/// The arguments from `first` on, as print() would show them, tab-separated.
std::string joinedArguments(lua_State* L, int first)
{
    std::string line;
    const int count = lua_gettop(L);
    for (int i = first; i <= count && line.size() < kMaxLogBytes; ++i)
    {
        if (i > first)
        {
            line += '\t';
        }
        std::size_t length = 0;
        const char* text = luaL_tolstring(L, i, &length);
        line.append(text, length);
        lua_pop(L, 1);
    }
    if (line.size() > kMaxLogBytes)
    {
        line.resize(kMaxLogBytes);
    }
    return line;
}

// ---- JSON <-> Lua

void pushJson(lua_State* L, const nlohmann::json& value, int depth)
{
    luaL_checkstack(L, 4, "json: nested too deeply");
    Sandbox::of(L).charge(L, 1);
    switch (value.type())
    {
    case nlohmann::json::value_t::null:
        lua_pushlightuserdata(L, jsonNull());
        return;
    case nlohmann::json::value_t::boolean:
        lua_pushboolean(L, value.get<bool>() ? 1 : 0);
        return;
    case nlohmann::json::value_t::number_integer:
        lua_pushinteger(L, static_cast<lua_Integer>(value.get<std::int64_t>()));
        return;
    case nlohmann::json::value_t::number_unsigned:
    {
        const auto n = value.get<std::uint64_t>();
        if (n <= static_cast<std::uint64_t>(std::numeric_limits<lua_Integer>::max()))
        {
            lua_pushinteger(L, static_cast<lua_Integer>(n));
        }
        else
        {
            lua_pushnumber(L, static_cast<lua_Number>(n));
        }
        return;
    }
    case nlohmann::json::value_t::number_float:
        lua_pushnumber(L, value.get<double>());
        return;
    case nlohmann::json::value_t::string:
    {
        const auto& text = value.get_ref<const std::string&>();
        lua_pushlstring(L, text.data(), text.size());
        return;
    }
    case nlohmann::json::value_t::array:
    {
        lua_createtable(L, static_cast<int>(std::min<std::size_t>(value.size(), 1u << 20)), 0);
        lua_Integer i = 1;
        for (const nlohmann::json& element : value)
        {
            pushJson(L, element, depth + 1);
            lua_rawseti(L, -2, i++);
        }
        return;
    }
    case nlohmann::json::value_t::object:
    {
        lua_createtable(L, 0, static_cast<int>(std::min<std::size_t>(value.size(), 1u << 20)));
        for (const auto& [key, element] : value.items())
        {
            lua_pushlstring(L, key.data(), key.size());
            pushJson(L, element, depth + 1);
            lua_rawset(L, -3);
        }
        return;
    }
    default:
        lua_pushnil(L);
        return;
    }
}

/// Parses `text` and pushes its value; raises "function: ..." when it is not JSON or nests too deeply.
void decodeJson(lua_State* L, const char* function, std::string_view text)
{
    Sandbox::of(L).charge(L, 1 + text.size() / kBytesPerInstruction);
    bool tooDeep = false;
    const nlohmann::json::parser_callback_t limitDepth =
        [&tooDeep](int depth, nlohmann::json::parse_event_t /*event*/, nlohmann::json& /*parsed*/)
    {
        if (depth > kMaxJsonDepth)
        {
            tooDeep = true;
            return false;
        }
        return true;
    };
    nlohmann::json value = nlohmann::json::parse(text.begin(), text.end(), limitDepth, false);
    if (tooDeep)
    {
        raiseError(L, function, "JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    }
    if (value.is_discarded())
    {
        raiseError(L, function, "not valid JSON");
    }
    pushJson(L, value, 0);
}

nlohmann::json toJson(lua_State* L, int index, int depth)
{
    index = lua_absindex(L, index);
    if (depth > kMaxJsonDepth)
    {
        raiseError(L, "json.encode",
                   "tables nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (or a cycle)");
    }
    luaL_checkstack(L, 4, "json.encode: nested too deeply");
    Sandbox::of(L).charge(L, 1);
    switch (lua_type(L, index))
    {
    case LUA_TNIL:
        return nullptr;
    case LUA_TBOOLEAN:
        return lua_toboolean(L, index) != 0;
    case LUA_TNUMBER:
        if (lua_isinteger(L, index) != 0)
        {
            return static_cast<std::int64_t>(lua_tointeger(L, index));
        }
        if (!std::isfinite(lua_tonumber(L, index)))
        {
            raiseError(L, "json.encode", "NaN and infinities have no JSON form");
        }
        return lua_tonumber(L, index);
    case LUA_TSTRING:
    {
        std::size_t length = 0;
        const char* text = lua_tolstring(L, index, &length);
        return std::string(text, length);
    }
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, index) == jsonNull())
        {
            return nullptr;
        }
        break;
    case LUA_TTABLE:
    {
        // An array when the keys are exactly 1 .. n (n > 0), else an object, whose keys must be strings.
        const lua_Unsigned border = lua_rawlen(L, index);
        lua_Unsigned keys = 0;
        bool sequence = true;
        bool strings = true;
        lua_pushnil(L);
        while (lua_next(L, index) != 0)
        {
            ++keys;
            const bool isString = lua_type(L, -2) == LUA_TSTRING;
            strings = strings && isString;
            int isInteger = 0;
            const lua_Integer k = isString ? 0 : lua_tointegerx(L, -2, &isInteger);
            sequence = sequence && isInteger != 0 && k >= 1 && static_cast<lua_Unsigned>(k) <= border;
            lua_pop(L, 1);
        }
        if (keys > 0 && sequence && keys == border)
        {
            nlohmann::json array = nlohmann::json::array();
            for (lua_Unsigned i = 1; i <= border; ++i)
            {
                lua_rawgeti(L, index, static_cast<lua_Integer>(i));
                array.push_back(toJson(L, -1, depth + 1));
                lua_pop(L, 1);
            }
            return array;
        }
        if (!strings)
        {
            raiseError(L, "json.encode",
                       "a table whose keys are neither strings nor 1 .. n has no JSON form");
        }
        nlohmann::json object = nlohmann::json::object();
        lua_pushnil(L);
        while (lua_next(L, index) != 0)
        {
            std::size_t length = 0;
            const char* key = lua_tolstring(L, -2, &length);
            object[std::string(key, length)] = toJson(L, -1, depth + 1);
            lua_pop(L, 1);
        }
        return object;
    }
    default:
        break;
    }
    raiseError(L, "json.encode", std::string("a ") + luaL_typename(L, index) + " has no JSON form");
}

int jsonEncode(lua_State* L)
{
    luaL_checkany(L, 1);
    const std::string text = toJson(L, 1, 0).dump();
    lua_pushlstring(L, text.data(), text.size());
    return 1;
}

int jsonDecode(lua_State* L)
{
    const Args args(L, "json.decode");
    decodeJson(L, "json.decode", args.string(1, "text"));
    return 1;
}

// ---- The room

int roomTick(lua_State* L)
{
    lua_pushinteger(L, static_cast<lua_Integer>(Args(L, "tick").room().tick()));
    return 1;
}

int roomTickSeconds(lua_State* L)
{
    lua_pushnumber(L, Args(L, "tick_seconds").room().tickSeconds());
    return 1;
}

int roomName(lua_State* L)
{
    const std::string_view name = Args(L, "name").room().roomName();
    lua_pushlstring(L, name.data(), name.size());
    return 1;
}

int roomSettings(lua_State* L)
{
    const std::string_view text = Args(L, "settings").room().settings();
    decodeJson(L, "settings", text.empty() ? std::string_view("{}") : text);
    return 1;
}

int roomClients(lua_State* L)
{
    RoomContext& room = Args(L, "clients").room();
    const std::size_t count = room.clientCount();
    lua_createtable(L, static_cast<int>(std::min<std::size_t>(count, 1u << 16)), 0);
    for (std::size_t i = 0; i < count; ++i)
    {
        pushClient(L, room.clientAt(i));
        lua_rawseti(L, -2, static_cast<lua_Integer>(i + 1));
    }
    return 1;
}

int roomClient(lua_State* L)
{
    const Args args(L, "client");
    RoomContext& room = args.room();
    const ClientInfo client = room.client(args.clientId(2));
    if (client.clientId == 0)
    {
        lua_pushnil(L);
    }
    else
    {
        pushClient(L, client);
    }
    return 1;
}

int roomOwnedBodies(lua_State* L)
{
    const Args args(L, "owned_bodies");
    RoomContext& room = args.room();
    const std::span<const BodyId> bodies = room.ownedBodies(args.clientId(2));
    lua_createtable(L, static_cast<int>(std::min<std::size_t>(bodies.size(), 1u << 16)), 0);
    lua_Integer i = 1;
    for (const BodyId id : bodies)
    {
        pushBody(L, id);
        lua_rawseti(L, -2, i++);
    }
    return 1;
}

int roomGiveBody(lua_State* L)
{
    const Args args(L, "give_body");
    RoomContext& room = args.room();
    const std::uint32_t client = args.clientId(2);
    const BodyId body = args.body(3, "body", room.world());
    lua_pushboolean(L, room.giveBody(client, body) ? 1 : 0);
    return 1;
}

int roomTakeBody(lua_State* L)
{
    const Args args(L, "take_body");
    RoomContext& room = args.room();
    lua_pushboolean(L, room.takeBody(args.body(2, "body", room.world())) ? 1 : 0);
    return 1;
}

int roomSpawnPlayer(lua_State* L)
{
    const Args args(L, "spawn_player");
    RoomContext& room = args.room();
    const std::uint32_t client = args.clientId(2);
    BodyId id;
    if (lua_isnoneornil(L, 3))
    {
        id = room.spawnPlayer(client);
    }
    else
    {
        const Vec3 at = args.position(3);
        id = room.spawnPlayer(client, &at);
    }
    if (id.isNull())
    {
        lua_pushnil(L);
    }
    else
    {
        pushBody(L, id);
    }
    return 1;
}

int roomKick(lua_State* L)
{
    const Args args(L, "kick");
    RoomContext& room = args.room();
    const std::uint32_t client = args.clientId(2);
    std::string_view reason = lua_isnoneornil(L, 3) ? std::string_view("kicked") : args.string(3, "reason");
    reason = reason.substr(0, kMaxLogicReasonBytes);
    lua_pushboolean(L, room.kick(client, reason) ? 1 : 0);
    return 1;
}

int roomSetRoomState(lua_State* L)
{
    const Args args(L, "set_room_state");
    RoomContext& room = args.room();
    lua_pushboolean(L, room.setRoomState(bytesOf(args.string(2, "state"))) ? 1 : 0);
    return 1;
}

int roomSetClientState(lua_State* L)
{
    const Args args(L, "set_client_state");
    RoomContext& room = args.room();
    const std::uint32_t client = args.clientId(2);
    lua_pushboolean(L, room.setClientState(client, bytesOf(args.string(3, "state"))) ? 1 : 0);
    return 1;
}

int roomRoomState(lua_State* L)
{
    pushBytes(L, Args(L, "room_state").room().roomState());
    return 1;
}

int roomClientState(lua_State* L)
{
    const Args args(L, "client_state");
    RoomContext& room = args.room();
    pushBytes(L, room.clientState(args.clientId(2)));
    return 1;
}

int roomLog(lua_State* L)
{
    RoomContext& room = Args(L, "log").room();
    const std::string line = joinedArguments(L, 2);
    room.log(line);
    return 0;
}

// ---- Bodies

physics::BodyType bodyTypeNamed(const Args& args, const std::string& name)
{
    if (name == "dynamic")
    {
        return physics::BodyType::Dynamic;
    }
    if (name == "static")
    {
        return physics::BodyType::Static;
    }
    if (name == "kinematic")
    {
        return physics::BodyType::Kinematic;
    }
    args.fail("desc.type", "must be \"dynamic\", \"static\" or \"kinematic\"");
}

float positiveField(const Args& args, int table, const char* key, std::string_view name)
{
    const float value = args.realField(table, key, name, -1.0f);
    if (!(value > 0.0f))
    {
        args.fail(name, "must be a number > 0");
    }
    return value;
}

physics::Shape shapeField(const Args& args, int desc)
{
    lua_State* L = args.state();
    if (!args.field(desc, "shape"))
    {
        args.fail("desc.shape", "is required ({kind=\"sphere\", radius=} or box or capsule)");
    }
    const int shape = lua_gettop(L);
    if (lua_type(L, shape) != LUA_TTABLE)
    {
        args.failType(shape, "desc.shape", "a table");
    }
    const std::string kind = args.stringField(shape, "kind", "desc.shape.kind", "");
    physics::Shape result;
    if (kind == "sphere")
    {
        result = physics::Shape::makeSphere(positiveField(args, shape, "radius", "desc.shape.radius"));
    }
    else if (kind == "box")
    {
        const Vec3 half = args.vec3Field(shape, "half", "desc.shape.half", Vec3{-1.0f, -1.0f, -1.0f});
        if (!(half.x > 0.0f && half.y > 0.0f && half.z > 0.0f))
        {
            args.fail("desc.shape.half", "must have x, y and z > 0");
        }
        result = physics::Shape::makeBox(half);
    }
    else if (kind == "capsule")
    {
        const float halfHeight = positiveField(args, shape, "half_height", "desc.shape.half_height");
        result = physics::Shape::makeCapsule(halfHeight,
                                             positiveField(args, shape, "radius", "desc.shape.radius"));
    }
    else
    {
        args.fail("desc.shape.kind", "must be \"sphere\", \"box\" or \"capsule\"");
    }
    lua_pop(L, 1);
    return result;
}

physics::Quat orientationField(const Args& args, int desc)
{
    lua_State* L = args.state();
    if (!args.field(desc, "orientation"))
    {
        return physics::Quat::identity();
    }
    const int table = lua_gettop(L);
    if (lua_type(L, table) != LUA_TTABLE)
    {
        args.failType(table, "desc.orientation", "a table {x=, y=, z=, w=}");
    }
    const physics::Quat q{args.realField(table, "x", "desc.orientation.x", NAN),
                          args.realField(table, "y", "desc.orientation.y", NAN),
                          args.realField(table, "z", "desc.orientation.z", NAN),
                          args.realField(table, "w", "desc.orientation.w", NAN)};
    const float norm = std::sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
    if (!std::isfinite(norm) || norm < 1e-6f)
    {
        args.fail("desc.orientation", "must be a quaternion {x=, y=, z=, w=} of non-zero length");
    }
    lua_pop(L, 1);
    return physics::normalize(q);
}

int roomCreateBody(lua_State* L)
{
    const Args args(L, "create_body");
    RoomContext& room = args.room();
    args.table(2, "desc", false);
    physics::BodyDesc desc;
    desc.type = bodyTypeNamed(args, args.stringField(2, "type", "desc.type", "dynamic"));
    desc.shape = shapeField(args, 2);
    desc.transform.p = args.vec3Field(2, "position", "desc.position", Vec3{});
    if (!physics::withinWorldBound(desc.transform.p))
    {
        args.fail("desc.position", "must be within the world's bound (1e6 m)");
    }
    desc.transform.q = orientationField(args, 2);
    desc.linearVelocity = args.vec3Field(2, "velocity", "desc.velocity", Vec3{});
    desc.angularVelocity = args.vec3Field(2, "angular_velocity", "desc.angular_velocity", Vec3{});
    desc.isSensor = args.booleanField(2, "sensor", "desc.sensor", false);
    desc.layer = static_cast<std::uint8_t>(
        args.integerField(2, "layer", "desc.layer", 0, physics::kMaxCollisionLayers - 1, 0));
    desc.group = static_cast<std::uint32_t>(args.integerField(2, "group", "desc.group", 0, kMaxUint32, 0));
    desc.density = args.realField(2, "density", "desc.density", desc.density);
    desc.friction = args.realField(2, "friction", "desc.friction", desc.friction);
    desc.restitution = args.realField(2, "restitution", "desc.restitution", desc.restitution);
    desc.linearDamping = args.realField(2, "linear_damping", "desc.linear_damping", desc.linearDamping);
    desc.angularDamping = args.realField(2, "angular_damping", "desc.angular_damping", desc.angularDamping);
    desc.gravityScale = args.realField(2, "gravity_scale", "desc.gravity_scale", desc.gravityScale);
    desc.allowSleep = args.booleanField(2, "allow_sleep", "desc.allow_sleep", desc.allowSleep);

    const physics::CreateBodyResult made = room.world().createBody(desc);
    if (made.status == physics::WorldStatus::BodyCapacityReached)
    {
        lua_pushnil(L);
        lua_pushliteral(L, "the world is full");
        return 2;
    }
    if (made.status != physics::WorldStatus::Ok)
    {
        raiseError(L, "create_body",
                   "the world refused the description (a size, density, friction, "
                   "restitution or damping out of range)");
    }
    pushBody(L, made.id);
    return 1;
}

int roomRemoveBody(lua_State* L)
{
    const Args args(L, "remove_body");
    RoomContext& room = args.room();
    const BodyId id = args.body(2, "body", room.world());
    room.takeBody(id); // no client keeps a removed body
    room.world().destroyBody(id);
    return 0;
}

int roomIsValid(lua_State* L)
{
    const Args args(L, "is_valid");
    RoomContext& room = args.room();
    lua_pushboolean(L, room.world().isValid(args.bodyId(2, "body")) ? 1 : 0);
    return 1;
}

physics::BodyState stateOf(const Args& args, RoomContext& room, int index)
{
    physics::BodyState state;
    room.world().getBody(args.body(index, "body", room.world()), state);
    return state;
}

int pushVec3Values(lua_State* L, const Vec3& v)
{
    lua_pushnumber(L, v.x);
    lua_pushnumber(L, v.y);
    lua_pushnumber(L, v.z);
    return 3;
}

int roomPosition(lua_State* L)
{
    const Args args(L, "position");
    return pushVec3Values(L, stateOf(args, args.room(), 2).transform.p);
}

int roomBodyType(lua_State* L)
{
    const Args args(L, "body_type");
    const physics::BodyType type = stateOf(args, args.room(), 2).type;
    lua_pushstring(L, type == physics::BodyType::Dynamic     ? "dynamic"
                      : type == physics::BodyType::Kinematic ? "kinematic"
                                                             : "static");
    return 1;
}

int roomOrientation(lua_State* L)
{
    const Args args(L, "orientation");
    const physics::Quat q = stateOf(args, args.room(), 2).transform.q;
    lua_pushnumber(L, q.x);
    lua_pushnumber(L, q.y);
    lua_pushnumber(L, q.z);
    lua_pushnumber(L, q.w);
    return 4;
}

int roomVelocity(lua_State* L)
{
    const Args args(L, "velocity");
    return pushVec3Values(L, stateOf(args, args.room(), 2).linearVelocity);
}

int roomAngularVelocity(lua_State* L)
{
    const Args args(L, "angular_velocity");
    return pushVec3Values(L, stateOf(args, args.room(), 2).angularVelocity);
}

/// Raises for a status the arguments should have ruled out (a body of the wrong type, mostly).
void checkStatus(const Args& args, physics::WorldStatus status)
{
    if (status == physics::WorldStatus::WrongBodyType)
    {
        args.fail("body", "is of a type this does not apply to (forces and impulses: dynamic bodies only)");
    }
    if (status != physics::WorldStatus::Ok)
    {
        raiseError(args.state(), args.function(), "the world refused it");
    }
}

int roomSetPosition(lua_State* L)
{
    const Args args(L, "set_position");
    RoomContext& room = args.room();
    physics::BodyState state = stateOf(args, room, 2);
    state.transform.p = args.position(3);
    checkStatus(args, room.world().setTransform(state.id, state.transform));
    return 0;
}

int roomSetOrientation(lua_State* L)
{
    const Args args(L, "set_orientation");
    RoomContext& room = args.room();
    physics::BodyState state = stateOf(args, room, 2);
    const physics::Quat q{args.real(3, "x"), args.real(4, "y"), args.real(5, "z"), args.real(6, "w")};
    const float norm = std::sqrt(q.x * q.x + q.y * q.y + q.z * q.z + q.w * q.w);
    if (!std::isfinite(norm) || norm < 1e-6f)
    {
        args.fail("x, y, z, w", "must be a quaternion of non-zero length");
    }
    state.transform.q = physics::normalize(q);
    checkStatus(args, room.world().setTransform(state.id, state.transform));
    return 0;
}

int roomSetVelocity(lua_State* L)
{
    const Args args(L, "set_velocity");
    RoomContext& room = args.room();
    const physics::BodyState state = stateOf(args, room, 2);
    const Vec3 v = args.vec3(3, "x", "y", "z");
    checkStatus(args, room.world().setVelocity(state.id, v, state.angularVelocity));
    return 0;
}

int roomSetAngularVelocity(lua_State* L)
{
    const Args args(L, "set_angular_velocity");
    RoomContext& room = args.room();
    const physics::BodyState state = stateOf(args, room, 2);
    const Vec3 w = args.vec3(3, "x", "y", "z");
    checkStatus(args, room.world().setVelocity(state.id, state.linearVelocity, w));
    return 0;
}

int roomApplyImpulse(lua_State* L)
{
    const Args args(L, "apply_impulse");
    RoomContext& room = args.room();
    const physics::BodyState state = stateOf(args, room, 2);
    const Vec3 impulse = args.vec3(3, "x", "y", "z");
    const Vec3 at = lua_isnoneornil(L, 6) ? state.centerOfMass : args.vec3(6, "px", "py", "pz");
    checkStatus(args, room.world().applyImpulse(state.id, impulse, at));
    return 0;
}

int roomApplyForce(lua_State* L)
{
    const Args args(L, "apply_force");
    RoomContext& room = args.room();
    const BodyId id = args.body(2, "body", room.world());
    checkStatus(args, room.world().applyCentralForce(id, args.vec3(3, "x", "y", "z")));
    return 0;
}

int roomWake(lua_State* L)
{
    const Args args(L, "wake");
    RoomContext& room = args.room();
    checkStatus(args, room.world().wakeBody(args.body(2, "body", room.world())));
    return 0;
}

// ---- Queries

/// A ray from arguments first .. first + 6 (origin, direction, max distance) and an optional filter table.
struct RayArgs
{
    physics::RayCastInput ray;
    physics::QueryFilter filter;
    float maxDistance = 0.0f;
};

RayArgs rayArgs(const Args& args, int first)
{
    RayArgs out;
    const Vec3 origin = args.vec3(first, "ox", "oy", "oz");
    if (!physics::withinWorldBound(origin))
    {
        args.fail("ox, oy, oz", "must be within the world's bound (1e6 m)");
    }
    const Vec3 direction = args.vec3(first + 3, "dx", "dy", "dz");
    const float length = physics::length(direction);
    if (!(length > 1e-12f) || !std::isfinite(length))
    {
        args.fail("dx, dy, dz", "must be a direction of non-zero length");
    }
    const double maxDistance = args.number(first + 6, "max_distance");
    if (!(maxDistance > 0.0) || maxDistance > kMaxRayDistance)
    {
        args.fail("max_distance", "must be in (0, 4e6] metres");
    }
    out.maxDistance = static_cast<float>(maxDistance);
    out.ray.origin = origin;
    out.ray.translation = direction * (out.maxDistance / length);
    out.ray.maxFraction = 1.0f;
    const int filter = first + 7;
    if (args.table(filter, "filter", true))
    {
        if (args.field(filter, "ignore_body"))
        {
            out.filter.ignoreBody = args.bodyId(-1, "filter.ignore_body");
            lua_pop(args.state(), 1);
        }
        out.filter.layerMask = static_cast<std::uint32_t>(
            args.integerField(filter, "layer_mask", "filter.layer_mask", 0, kMaxUint32, kMaxUint32));
        out.filter.ignoreGroup =
            static_cast<std::uint32_t>(args.integerField(filter, "group", "filter.group", 0, kMaxUint32, 0));
        out.filter.includeSensors = args.booleanField(filter, "sensors", "filter.sensors", false);
    }
    return out;
}

void setNumberField(lua_State* L, const char* key, double value)
{
    lua_pushnumber(L, value);
    lua_setfield(L, -2, key);
}

void pushHit(lua_State* L, const physics::RayQueryHit& hit, float maxDistance)
{
    lua_createtable(L, 0, 9);
    pushBody(L, hit.body);
    lua_setfield(L, -2, "body");
    setNumberField(L, "x", hit.point.x);
    setNumberField(L, "y", hit.point.y);
    setNumberField(L, "z", hit.point.z);
    setNumberField(L, "nx", hit.normal.x);
    setNumberField(L, "ny", hit.normal.y);
    setNumberField(L, "nz", hit.normal.z);
    setNumberField(L, "fraction", hit.fraction);
    setNumberField(L, "distance", static_cast<double>(hit.fraction) * maxDistance);
}

int roomRaycast(lua_State* L)
{
    const Args args(L, "raycast");
    RoomContext& room = args.room();
    const RayArgs ray = rayArgs(args, 2);
    physics::RayQueryHit hit;
    if (room.world().castRayClosest(ray.ray, ray.filter, hit))
    {
        pushHit(L, hit, ray.maxDistance);
    }
    else
    {
        lua_pushnil(L);
    }
    return 1;
}

ViewTime viewArg(const Args& args, int index)
{
    args.table(index, "view", false);
    lua_State* L = args.state();
    const lua_Integer most = std::numeric_limits<lua_Integer>::max();
    ViewTime view;
    if (!args.field(index, "from"))
    {
        args.fail("view.from", "is required (a tick, as in a message's view)");
    }
    view.fromTick = static_cast<std::uint64_t>(args.integer(-1, "view.from", 0, most));
    lua_pop(L, 1);
    if (!args.field(index, "to"))
    {
        args.fail("view.to", "is required (a tick, as in a message's view)");
    }
    view.toTick = static_cast<std::uint64_t>(args.integer(-1, "view.to", 0, most));
    lua_pop(L, 1);
    const float fraction = args.realField(index, "fraction", "view.fraction", 0.0f);
    if (!(fraction >= 0.0f && fraction <= 1.0f))
    {
        args.fail("view.fraction", "must be in [0, 1]");
    }
    view.fraction = fraction;
    return view;
}

int roomRaycastAsSeen(lua_State* L)
{
    const Args args(L, "raycast_as_seen");
    RoomContext& room = args.room();
    const ViewTime view = viewArg(args, 2);
    const RayArgs ray = rayArgs(args, 3);
    physics::RayQueryHit hit;
    RewindStatus status = RewindStatus::NoHistory;
    if (room.castRayAsSeen(view, ray.ray, ray.filter, hit, &status))
    {
        pushHit(L, hit, ray.maxDistance);
    }
    else
    {
        lua_pushnil(L);
    }
    // pose_history.h's statuses, by rewindStatusName ("exact", "clamped_to_oldest", ...).
    lua_pushstring(L, rewindStatusName(status));
    return 2;
}

int roomToString(lua_State* L)
{
    const auto* ref = static_cast<RoomRef*>(luaL_checkudata(L, 1, kRoomMetatable));
    lua_pushstring(L, ref->room != nullptr ? "room" : "room (no longer valid)");
    return 1;
}

const luaL_Reg kRoomMethods[] = {
    {"tick", guarded<roomTick>},
    {"tick_seconds", guarded<roomTickSeconds>},
    {"name", guarded<roomName>},
    {"settings", guarded<roomSettings>},
    {"clients", guarded<roomClients>},
    {"client", guarded<roomClient>},
    {"owned_bodies", guarded<roomOwnedBodies>},
    {"give_body", guarded<roomGiveBody>},
    {"take_body", guarded<roomTakeBody>},
    {"spawn_player", guarded<roomSpawnPlayer>},
    {"kick", guarded<roomKick>},
    {"set_room_state", guarded<roomSetRoomState>},
    {"set_client_state", guarded<roomSetClientState>},
    {"room_state", guarded<roomRoomState>},
    {"client_state", guarded<roomClientState>},
    {"log", guarded<roomLog>},
    {"create_body", guarded<roomCreateBody>},
    {"remove_body", guarded<roomRemoveBody>},
    {"is_valid", guarded<roomIsValid>},
    {"body_type", guarded<roomBodyType>},
    {"position", guarded<roomPosition>},
    {"orientation", guarded<roomOrientation>},
    {"velocity", guarded<roomVelocity>},
    {"angular_velocity", guarded<roomAngularVelocity>},
    {"set_position", guarded<roomSetPosition>},
    {"set_orientation", guarded<roomSetOrientation>},
    {"set_velocity", guarded<roomSetVelocity>},
    {"set_angular_velocity", guarded<roomSetAngularVelocity>},
    {"apply_impulse", guarded<roomApplyImpulse>},
    {"apply_force", guarded<roomApplyForce>},
    {"wake", guarded<roomWake>},
    {"raycast", guarded<roomRaycast>},
    {"raycast_as_seen", guarded<roomRaycastAsSeen>},
    {nullptr, nullptr},
};

const luaL_Reg kJsonFunctions[] = {
    {"encode", guarded<jsonEncode>},
    {"decode", guarded<jsonDecode>},
    {nullptr, nullptr},
};

void setIntegerField(lua_State* L, const char* key, lua_Integer value)
{
    lua_pushinteger(L, value);
    lua_setfield(L, -2, key);
}

} // namespace

int installBindings(lua_State* L)
{
    luaL_newmetatable(L, kRoomMetatable);
    luaL_newlib(L, kRoomMethods);
    lua_setfield(L, -2, "__index");
    lua_pushcfunction(L, roomToString);
    lua_setfield(L, -2, "__tostring");
    lua_pushliteral(L, "room");
    lua_setfield(L, -2, "__metatable"); // getmetatable(room) gives this string, not the methods
    lua_pop(L, 1);

    luaL_newlib(L, kJsonFunctions);
    lua_pushlightuserdata(L, jsonNull());
    lua_setfield(L, -2, "null");
    lua_setglobal(L, "json");
    return 0;
}

RoomRef* pushRoom(lua_State* L, RoomContext& room, const void* anchor)
{
    auto* ref = static_cast<RoomRef*>(lua_newuserdatauv(L, sizeof(RoomRef), 0));
    ref->room = nullptr;
    luaL_setmetatable(L, kRoomMetatable);
    lua_pushvalue(L, -1);
    lua_rawsetp(L, LUA_REGISTRYINDEX, anchor);
    ref->room = &room; // only once anchored: the caller clears what it was handed
    return ref;
}

void releaseRoom(lua_State* L, RoomRef* ref, const void* anchor)
{
    if (ref != nullptr)
    {
        ref->room = nullptr;
    }
    lua_pushnil(L);
    lua_rawsetp(L, LUA_REGISTRYINDEX, anchor); // an existing key set to nil, or a nil not inserted
}

void pushBody(lua_State* L, physics::BodyId id)
{
    const std::uint64_t packed = (static_cast<std::uint64_t>(id.generation) << 32) | id.index;
    lua_pushinteger(L, id.isNull() ? 0 : static_cast<lua_Integer>(packed));
}

void pushVec3(lua_State* L, const physics::Vec3& v)
{
    lua_createtable(L, 0, 3);
    setNumberField(L, "x", v.x);
    setNumberField(L, "y", v.y);
    setNumberField(L, "z", v.z);
}

void pushClient(lua_State* L, const ClientInfo& client)
{
    lua_createtable(L, 0, 3);
    setIntegerField(L, "id", client.clientId);
    lua_pushlstring(L, client.name.data(), client.name.size());
    lua_setfield(L, -2, "name");
    lua_pushboolean(L, client.spectator ? 1 : 0);
    lua_setfield(L, -2, "spectator");
}

void pushMessage(lua_State* L, const GameMessage& message)
{
    lua_createtable(L, 0, 5);
    setIntegerField(L, "client", message.clientId);
    setIntegerField(L, "sequence", message.sequence);
    setIntegerField(L, "tick", static_cast<lua_Integer>(message.tick));
    pushBytes(L, message.data);
    lua_setfield(L, -2, "data");
    lua_createtable(L, 0, 3);
    setIntegerField(L, "from", static_cast<lua_Integer>(message.view.fromTick));
    setIntegerField(L, "to", static_cast<lua_Integer>(message.view.toTick));
    setNumberField(L, "fraction", message.view.fraction);
    lua_setfield(L, -2, "view");
}

const char* leaveReasonName(LeaveReason reason)
{
    switch (reason)
    {
    case LeaveReason::Disconnected:
        return "disconnected";
    case LeaveReason::TimedOut:
        return "timed_out";
    case LeaveReason::Kicked:
        return "kicked";
    case LeaveReason::Shutdown:
        return "shutdown";
    }
    return "unknown";
}

} // namespace polytope::server::lua
