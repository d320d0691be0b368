// polytope-server: the Lua sandbox of a scripted room logic (see lua_sandbox.h for the why).
#include "lua_sandbox.h"

#include "polytope/server/regular_file.h"

#include <algorithm>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string_view>
#include <vector>

namespace polytope::server::lua
{
namespace
{

constexpr std::uint64_t kSaturated = std::numeric_limits<std::uint64_t>::max();
/// The longest line print() hands to the room's log (bytes; longer ones are cut).
constexpr std::size_t kMaxPrintBytes = 1024;

std::uint64_t addSaturating(std::uint64_t a, std::uint64_t b)
{
    return a > kSaturated - b ? kSaturated : a + b;
}

std::uint64_t mulSaturating(std::uint64_t a, std::uint64_t b)
{
    return (a != 0 && b > kSaturated / a) ? kSaturated : a * b;
}

/// How a library function is charged, beyond one instruction.
enum class Cost : lua_Integer
{
    Arguments = 0, ///< every string argument by its length, every table by its border
    Rep,           ///< string.rep(s, n, sep): n copies
    Unpack,        ///< table.unpack(t, i, j): j - i + 1 values
    Move,          ///< table.move(a, f, e, t): e - f + 1 elements
    Sort,          ///< table.sort(t): n log n comparisons
    PlainFind,     ///< string.find, forced plain: |s| |pattern| byte comparisons at worst
};

std::uint64_t stringBytes(lua_State* L, int index)
{
    return lua_type(L, index) == LUA_TSTRING ? lua_rawlen(L, index) : 0;
}

/// The length the library will loop over for the table at `index`: its __len when it has one (which a
/// library function obeys, so a table claiming to be huge is charged as huge), else its border. May run
/// the script's __len (counted by the hook like any Lua code).
std::uint64_t tableLength(lua_State* L, int index)
{
    if (luaL_getmetafield(L, index, "__len") == LUA_TNIL)
    {
        return lua_rawlen(L, index);
    }
    lua_pop(L, 1);
    lua_len(L, index);
    int isInteger = 0;
    const lua_Integer length = lua_tointegerx(L, -1, &isInteger);
    lua_pop(L, 1);
    return isInteger != 0 && length > 0 ? static_cast<std::uint64_t>(length) : 0;
}

std::uint64_t argumentsCost(lua_State* L)
{
    std::uint64_t cost = 1;
    const int count = lua_gettop(L);
    for (int i = 1; i <= count; ++i)
    {
        const int type = lua_type(L, i);
        if (type == LUA_TSTRING)
        {
            cost = addSaturating(cost, lua_rawlen(L, i) / kBytesPerInstruction);
        }
        else if (type == LUA_TTABLE)
        {
            cost = addSaturating(cost, tableLength(L, i));
        }
    }
    return cost;
}

/// An integer argument, or `fallback` when absent or not an integer (the function itself then complains).
lua_Integer integerOr(lua_State* L, int index, lua_Integer fallback)
{
    int isInteger = 0;
    const lua_Integer value = lua_tointegerx(L, index, &isInteger);
    return isInteger != 0 ? value : fallback;
}

std::uint64_t spanCost(lua_Integer first, lua_Integer last)
{
    if (last < first)
    {
        return 1;
    }
    const auto span = static_cast<std::uint64_t>(last) - static_cast<std::uint64_t>(first);
    return addSaturating(span, 2);
}

std::uint64_t costOf(lua_State* L, Cost kind)
{
    switch (kind)
    {
    case Cost::Arguments:
        return argumentsCost(L);
    case Cost::Rep:
    {
        const lua_Integer n = integerOr(L, 2, 0);
        if (n <= 0)
        {
            return 1;
        }
        const std::uint64_t each = stringBytes(L, 1) + stringBytes(L, 3);
        const auto copies = static_cast<std::uint64_t>(n);
        return addSaturating(copies, mulSaturating(copies, each) / kBytesPerInstruction);
    }
    case Cost::Unpack:
    {
        const lua_Integer first = integerOr(L, 2, 1);
        const lua_Integer last =
            !lua_isnoneornil(L, 3) ? integerOr(L, 3, 0)
            : lua_type(L, 1) == LUA_TTABLE
                ? static_cast<lua_Integer>(std::min<std::uint64_t>(tableLength(L, 1), 1ull << 62))
                : 0;
        return spanCost(first, last);
    }
    case Cost::Move:
        return spanCost(integerOr(L, 2, 1), integerOr(L, 3, 0));
    case Cost::Sort:
    {
        const std::uint64_t n = lua_type(L, 1) == LUA_TTABLE ? tableLength(L, 1) : 0;
        return addSaturating(1, mulSaturating(n, static_cast<std::uint64_t>(std::bit_width(n))));
    }
    case Cost::PlainFind:
    {
        // Lua patterns are gone: the search is always plain (the fourth argument forced to true).
        lua_settop(L, 4);
        lua_pushboolean(L, 1);
        lua_replace(L, 4);
        const std::uint64_t needle = stringBytes(L, 2) > 0 ? stringBytes(L, 2) : 1;
        return addSaturating(1, mulSaturating(stringBytes(L, 1), needle) / kBytesPerInstruction);
    }
    }
    return 1;
}

/// A library function behind a charge: upvalue 1 is the original (a plain C function, run in this frame so
/// that its argument errors name the script's line and the function), upvalue 2 the Cost.
int chargedCall(lua_State* L)
{
    const auto kind = static_cast<Cost>(lua_tointeger(L, lua_upvalueindex(2)));
    const lua_CFunction original = lua_tocfunction(L, lua_upvalueindex(1));
    Sandbox::of(L).charge(L, costOf(L, kind));
    return original(L);
}

/// pcall, xpcall, coroutine.resume and coroutine.close: what they caught may be a budget stop, which must
/// reach the room; and each is charged kThrowInstructions up front, for the C++ exception an error (or a
/// yield) caught there costs. Upvalue 1 is the original.
int rethrowingCall(lua_State* L)
{
    Sandbox& sandbox = Sandbox::of(L);
    sandbox.charge(L, kThrowInstructions);
    const int results = lua_tocfunction(L, lua_upvalueindex(1))(L);
    sandbox.charge(L, 0);
    return results;
}

/// xpcall's message handler, wrapped: once the budget is spent it is not called (the error passes as it
/// is). Lua calls the handler again for an error raised inside it, so a handler that spins would otherwise
/// be stopped and restarted until the C stack ran out, every time. Upvalue 1: the script's handler.
int guardedMessageHandler(lua_State* L)
{
    if (Sandbox::of(L).spent())
    {
        lua_settop(L, 1);
        return 1;
    }
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, lua_gettop(L) - 1, 1);
    return 1;
}

/// xpcall(f, handler, ...) with the handler guarded, then as rethrowingCall. Upvalue 1: the original.
int sandboxXpcall(lua_State* L)
{
    luaL_checktype(L, 2, LUA_TFUNCTION);
    lua_pushvalue(L, 2);
    lua_pushcclosure(L, guardedMessageHandler, 1);
    lua_replace(L, 2);
    return rethrowingCall(L);
}

/// coroutine.yield: in Lua compiled as C++ a yield from a C function is a C++ throw; charged like one.
/// Upvalue 1: the original.
int chargedYield(lua_State* L)
{
    Sandbox::of(L).charge(L, kThrowInstructions);
    return lua_tocfunction(L, lua_upvalueindex(1))(L);
}

int sandboxPrint(lua_State* L)
{
    const int count = lua_gettop(L);
    luaL_Buffer buffer;
    luaL_buffinit(L, &buffer);
    for (int i = 1; i <= count; ++i)
    {
        if (i > 1)
        {
            luaL_addchar(&buffer, '\t');
        }
        luaL_tolstring(L, i, nullptr);
        luaL_addvalue(&buffer);
    }
    luaL_pushresult(&buffer);
    std::size_t length = 0;
    const char* text = lua_tolstring(L, -1, &length);
    Sandbox& sandbox = Sandbox::of(L);
    std::string failure;
    try
    {
        if (sandbox.print)
        {
            sandbox.print(std::string_view(text, length < kMaxPrintBytes ? length : kMaxPrintBytes));
        }
        return 0;
    }
    catch (const std::exception& e)
    {
        failure = e.what();
    }
    return luaL_error(L, "print: %s", failure.c_str());
}

int sandboxCollectGarbage(lua_State* L)
{
    const char* option = luaL_optstring(L, 1, "collect");
    if (std::strcmp(option, "count") != 0)
    {
        raiseError(L, "collectgarbage",
                   std::string("option '") + option + "' is not allowed in the sandbox (only \"count\")");
    }
    const int kilobytes = lua_gc(L, LUA_GCCOUNT);
    const int bytes = lua_gc(L, LUA_GCCOUNTB);
    lua_pushnumber(L, static_cast<lua_Number>(kilobytes) + static_cast<lua_Number>(bytes) / 1024.0);
    return 1;
}

/// math.randomseed with a seed only: without one Lua would seed from the clock. Upvalue 1: the original.
int sandboxRandomSeed(lua_State* L)
{
    if (lua_type(L, 1) != LUA_TNUMBER)
    {
        raiseError(L, "math.randomseed", "a seed is required (the sandbox has no clock)");
    }
    return lua_tocfunction(L, lua_upvalueindex(1))(L);
}

/// setmetatable refusing a metatable with a __gc field. Lua runs finalizers with hooks off (lgc.c, GCTM),
/// so a finalizer that never returned would hang the room beyond any budget. An object is marked for
/// finalization only when its metatable has __gc as it is set, so a __gc added later is never called.
/// Upvalue 1: the original.
int sandboxSetMetatable(lua_State* L)
{
    if (lua_type(L, 2) == LUA_TTABLE)
    {
        lua_pushliteral(L, "__gc");
        const bool finalizer = lua_rawget(L, 2) != LUA_TNIL;
        lua_pop(L, 1);
        if (finalizer)
        {
            raiseError(L, "setmetatable",
                       "__gc metamethods are not allowed in the sandbox (finalizers run "
                       "outside the instruction budget)");
        }
    }
    return lua_tocfunction(L, lua_upvalueindex(1))(L);
}

/// One key of a table being ordered by sandboxPairs.
struct OrderedKey
{
    int rank = 0; ///< 0 number, 1 string, 2 boolean, 3 anything else (kept in next's order)
    bool isInteger = false;
    lua_Integer integer = 0;
    lua_Number number = 0;
    std::string_view text;    ///< a string key, kept alive by the key list on the stack
    lua_Integer position = 0; ///< in the key list
};

bool keyBefore(const OrderedKey& a, const OrderedKey& b)
{
    if (a.rank != b.rank)
    {
        return a.rank < b.rank;
    }
    switch (a.rank)
    {
    case 0:
        return a.isInteger && b.isInteger ? a.integer < b.integer : a.number < b.number;
    case 1:
        return a.text < b.text;
    case 2:
        return a.integer < b.integer;
    default:
        return false;
    }
}

/// The iterator sandboxPairs returns. Upvalues: the table, its ordered keys, the position reached.
int orderedNext(lua_State* L)
{
    lua_Integer position = lua_tointeger(L, lua_upvalueindex(3));
    for (;;)
    {
        ++position;
        if (lua_rawgeti(L, lua_upvalueindex(2), position) == LUA_TNIL)
        {
            return 1; // nil: done
        }
        lua_pushvalue(L, -1);
        if (lua_rawget(L, lua_upvalueindex(1)) != LUA_TNIL)
        {
            lua_pushinteger(L, position);
            lua_replace(L, lua_upvalueindex(3));
            return 2;
        }
        lua_pop(L, 2); // removed during the traversal
    }
}

/// pairs in a deterministic order. Lua seeds its string hashes from the clock and addresses (lstate.c,
/// luai_makeseed), so next's order over string keys changes from run to run, and a game iterating its
/// players by name would not replay. This pairs visits number keys in ascending order, then string keys
/// in byte order, then false and true, then any other keys (tables, functions) in next's order. A table
/// with a __pairs metamethod is left to it. Charged n log n. Upvalue 1: the original pairs.
int sandboxPairs(lua_State* L)
{
    const lua_CFunction original = lua_tocfunction(L, lua_upvalueindex(1));
    if (lua_type(L, 1) != LUA_TTABLE)
    {
        return original(L); // its error names the argument
    }
    if (luaL_getmetafield(L, 1, "__pairs") != LUA_TNIL)
    {
        lua_pop(L, 1);
        return original(L);
    }
    lua_settop(L, 1);
    lua_newtable(L); // 2: the keys, in next's order
    std::vector<OrderedKey> keys;
    lua_Integer count = 0;
    lua_pushnil(L);
    while (lua_next(L, 1) != 0)
    {
        lua_pop(L, 1);
        OrderedKey key;
        key.position = ++count;
        switch (lua_type(L, -1))
        {
        case LUA_TNUMBER:
            key.rank = 0;
            key.isInteger = lua_isinteger(L, -1) != 0;
            key.integer = lua_tointeger(L, -1);
            key.number = lua_tonumber(L, -1);
            break;
        case LUA_TSTRING:
            key.rank = 1;
            break;
        case LUA_TBOOLEAN:
            key.rank = 2;
            key.integer = lua_toboolean(L, -1);
            break;
        default:
            key.rank = 3;
            break;
        }
        keys.push_back(key);
        lua_pushvalue(L, -1);
        lua_rawseti(L, 2, count);
    }
    const auto n = static_cast<std::uint64_t>(count);
    Sandbox::of(L).charge(L,
                          addSaturating(n, mulSaturating(n, static_cast<std::uint64_t>(std::bit_width(n)))));
    for (OrderedKey& key : keys)
    {
        if (key.rank == 1)
        {
            lua_rawgeti(L, 2, key.position);
            std::size_t length = 0;
            const char* text = lua_tolstring(L, -1, &length);
            key.text = std::string_view(text, length); // the string lives on in the key list
            lua_pop(L, 1);
        }
    }
    std::stable_sort(keys.begin(), keys.end(), keyBefore);
    lua_pushvalue(L, 1);                            // upvalue 1: the table
    lua_createtable(L, static_cast<int>(count), 0); // upvalue 2: the keys in order
    lua_Integer i = 0;
    for (const OrderedKey& key : keys)
    {
        lua_rawgeti(L, 2, key.position);
        lua_rawseti(L, -2, ++i);
    }
    lua_pushinteger(L, 0); // upvalue 3: the position reached
    lua_pushcclosure(L, orderedNext, 3);
    lua_pushvalue(L, 1);
    lua_pushnil(L);
    return 3;
}

/// Replaces table[name] (table at `index`, absolute) by `wrapper` closed over the original and `extra`.
void wrapField(lua_State* L, int index, const char* name, lua_CFunction wrapper, lua_Integer extra,
               int upvalues)
{
    lua_getfield(L, index, name);
    if (lua_tocfunction(L, -1) == nullptr)
    {
        lua_pop(L, 1);
        return;
    }
    if (upvalues == 2)
    {
        lua_pushinteger(L, extra);
    }
    lua_pushcclosure(L, wrapper, upvalues);
    lua_setfield(L, index, name);
}

void chargeField(lua_State* L, int index, const char* name, Cost cost)
{
    wrapField(L, index, name, chargedCall, static_cast<lua_Integer>(cost), 2);
}

/// Charges every other C function of the library table at `index` by its arguments.
void chargeRemainingFields(lua_State* L, int index, std::initializer_list<std::string_view> skip)
{
    std::vector<std::string> names;
    lua_pushnil(L);
    while (lua_next(L, index) != 0)
    {
        if (lua_type(L, -2) == LUA_TSTRING && lua_tocfunction(L, -1) != nullptr)
        {
            const std::string name = lua_tostring(L, -2);
            bool skipped = false;
            for (const std::string_view s : skip)
            {
                skipped = skipped || s == name;
            }
            if (!skipped)
            {
                names.push_back(name);
            }
        }
        lua_pop(L, 1);
    }
    for (const std::string& name : names)
    {
        chargeField(L, index, name.c_str(), Cost::Arguments);
    }
}

void removeField(lua_State* L, int index, const char* name)
{
    lua_pushnil(L);
    lua_setfield(L, index, name);
}

int openLibrariesProtected(lua_State* L)
{
    static const luaL_Reg libraries[] = {
        {LUA_GNAME, luaopen_base},       {LUA_TABLIBNAME, luaopen_table}, {LUA_STRLIBNAME, luaopen_string},
        {LUA_MATHLIBNAME, luaopen_math}, {LUA_UTF8LIBNAME, luaopen_utf8}, {LUA_COLIBNAME, luaopen_coroutine},
    };
    for (const luaL_Reg& library : libraries)
    {
        luaL_requiref(L, library.name, library.func, 1);
        lua_pop(L, 1);
    }

    lua_pushglobaltable(L);
    const int globals = lua_gettop(L);
    for (const char* name : {"dofile", "loadfile", "load", "warn"})
    {
        removeField(L, globals, name);
    }
    lua_pushcfunction(L, sandboxPrint);
    lua_setfield(L, globals, "print");
    lua_pushcfunction(L, sandboxCollectGarbage);
    lua_setfield(L, globals, "collectgarbage");
    wrapField(L, globals, "setmetatable", sandboxSetMetatable, 0, 1);
    wrapField(L, globals, "pairs", sandboxPairs, 0, 1);
    wrapField(L, globals, "pcall", rethrowingCall, 0, 1);
    wrapField(L, globals, "xpcall", sandboxXpcall, 0, 1);
    chargeField(L, globals, "tonumber", Cost::Arguments);

    lua_getfield(L, globals, LUA_STRLIBNAME);
    const int string = lua_gettop(L);
    for (const char* name : {"dump", "match", "gmatch", "gsub"})
    {
        removeField(L, string, name);
    }
    chargeField(L, string, "find", Cost::PlainFind);
    chargeField(L, string, "rep", Cost::Rep);
    chargeRemainingFields(L, string, {"find", "rep"});

    lua_getfield(L, globals, LUA_TABLIBNAME);
    const int table = lua_gettop(L);
    chargeField(L, table, "unpack", Cost::Unpack);
    chargeField(L, table, "move", Cost::Move);
    chargeField(L, table, "sort", Cost::Sort);
    chargeRemainingFields(L, table, {"unpack", "move", "sort"});

    lua_getfield(L, globals, LUA_UTF8LIBNAME);
    chargeRemainingFields(L, lua_gettop(L), {});

    lua_getfield(L, globals, LUA_COLIBNAME);
    const int coroutine = lua_gettop(L);
    wrapField(L, coroutine, "resume", rethrowingCall, 0, 1);
    wrapField(L, coroutine, "close", rethrowingCall, 0, 1);
    wrapField(L, coroutine, "yield", chargedYield, 0, 1);

    lua_getfield(L, globals, LUA_MATHLIBNAME);
    const int math = lua_gettop(L);
    lua_getfield(L, math, "randomseed");
    lua_pushinteger(L, kRandomSeed);
    lua_call(L, 1, 0);
    wrapField(L, math, "randomseed", sandboxRandomSeed, 0, 1);
    return 0;
}

struct Chunk
{
    std::string_view text;
    const std::string* name = nullptr;
    std::string* shortSource = nullptr;
};

int runChunkProtected(lua_State* L)
{
    const Chunk& chunk = *static_cast<const Chunk*>(lua_touserdata(L, 1));
    const std::string chunkName = "@" + *chunk.name;
    if (luaL_loadbufferx(L, chunk.text.data(), chunk.text.size(), chunkName.c_str(), "t") != LUA_OK)
    {
        return lua_error(L);
    }
    lua_Debug info;
    lua_pushvalue(L, -1);
    lua_getinfo(L, ">S", &info);
    *chunk.shortSource = info.short_src;
    lua_call(L, 0, 0);
    return 0;
}

} // namespace

void raiseError(lua_State* L, const char* function, const std::string& message)
{
    luaL_error(L, "%s: %s", function, message.c_str());
    std::abort(); // luaL_error does not return
}

Sandbox::Sandbox(const LuaLimits& limits) : m_limits(limits)
{
    m_state = lua_newstate(&Sandbox::allocate, this);
    if (m_state == nullptr)
    {
        return;
    }
    *static_cast<Sandbox**>(lua_getextraspace(m_state)) = this;
    lua_pushcfunction(m_state, openLibrariesProtected);
    if (lua_pcall(m_state, 0, 0, 0) != LUA_OK)
    {
        lua_close(m_state);
        m_state = nullptr;
        return;
    }
    lua_sethook(m_state, &Sandbox::countHook, LUA_MASKCOUNT, kHookInterval);
}

Sandbox::~Sandbox()
{
    if (m_state != nullptr)
    {
        // Nothing of the script should run as the state closes (it has no finalizers; see
        // sandboxSetMetatable): should anything, it gets no budget and no memory.
        m_running = true;
        m_spent = true;
        m_used = kSaturated;
        lua_close(m_state);
    }
}

Sandbox& Sandbox::of(lua_State* L)
{
    return **static_cast<Sandbox**>(lua_getextraspace(L));
}

void* Sandbox::allocate(void* ud, void* block, std::size_t oldSize, std::size_t newSize)
{
    Sandbox& sandbox = *static_cast<Sandbox*>(ud);
    const std::size_t held = block != nullptr ? oldSize : 0;
    if (newSize == 0)
    {
        std::free(block);
        sandbox.m_bytes -= held;
        return nullptr;
    }
    if (newSize > held)
    {
        if (sandbox.m_running)
        {
            if (sandbox.m_spent &&
                sandbox.m_used > addSaturating(sandbox.m_limits.instructionsPerTick, kOverdraftInstructions))
            {
                return nullptr;
            }
            sandbox.chargeRaw(newSize / kBytesPerInstruction);
        }
        if (sandbox.m_bytes + (newSize - held) > sandbox.m_limits.memoryBytes)
        {
            ++sandbox.m_memoryRefusals;
            return nullptr;
        }
    }
    void* moved = std::realloc(block, newSize);
    if (moved == nullptr)
    {
        if (newSize <= held)
        {
            return block; // Lua counts on shrinking never failing: keep the larger block
        }
        ++sandbox.m_memoryRefusals;
        return nullptr;
    }
    sandbox.m_bytes = sandbox.m_bytes - held + newSize;
    return moved;
}

void Sandbox::chargeRaw(std::uint64_t cost)
{
    if (!m_running)
    {
        return;
    }
    m_used = addSaturating(m_used, cost);
    if (m_used > m_limits.instructionsPerTick)
    {
        m_spent = true;
    }
}

void Sandbox::charge(lua_State* L, std::uint64_t cost)
{
    chargeRaw(cost);
    if (m_spent && m_running)
    {
        raiseBudgetStop(L, 1);
    }
}

void Sandbox::countHook(lua_State* L, lua_Debug* /*ar*/)
{
    Sandbox& sandbox = of(L);
    sandbox.chargeRaw(kHookInterval);
    if (sandbox.m_spent)
    {
        sandbox.raiseBudgetStop(L, 0);
    }
}

void Sandbox::raiseBudgetStop(lua_State* L, int level)
{
    std::string where;
    lua_Debug info;
    if (lua_getstack(L, level, &info) != 0 && lua_getinfo(L, "Sl", &info) != 0 && info.currentline > 0)
    {
        where = std::string(info.short_src) + ":" + std::to_string(info.currentline) + ": ";
    }
    else if (!m_shortSource.empty())
    {
        where = m_shortSource + ": ";
    }
    m_budgetMessage =
        where + "instruction budget spent (" + std::to_string(m_limits.instructionsPerTick) + " per tick)";
    lua_pushlstring(L, m_budgetMessage.data(), m_budgetMessage.size());
    lua_error(L);
    std::abort(); // lua_error does not return
}

void Sandbox::beginTick(std::uint64_t tick)
{
    if (!m_hasTick || tick != m_tick)
    {
        m_hasTick = true;
        m_tick = tick;
        m_used = 0;
        m_spent = false;
    }
}

void Sandbox::setBudget(const Budget& budget)
{
    m_used = budget.used;
    m_spent = budget.spent;
}

bool Sandbox::runChunk(std::string_view text, const std::string& name, std::string& error)
{
    m_shortSource = name;
    setBudget({});
    Chunk chunk{text, &name, &m_shortSource};
    const CallStatus status = call(runChunkProtected, &chunk, error);
    setBudget({});
    m_hasTick = false;
    return status == CallStatus::Ok;
}

Sandbox::CallStatus Sandbox::call(lua_CFunction function, void* arg, std::string& error)
{
    lua_State* L = m_state;
    const int top = lua_gettop(L);
    const bool outer = m_running; // a call made from inside another stays charged when it returns
    m_running = true;
    lua_pushcfunction(L, function);
    lua_pushlightuserdata(L, arg);
    const int status = lua_pcall(L, 1, 0, 0);
    CallStatus result = CallStatus::Ok;
    if (status != LUA_OK)
    {
        if (m_spent)
        {
            result = CallStatus::BudgetStop;
            ++m_budgetStops;
            error = m_budgetMessage.empty() ? m_shortSource + ": instruction budget spent (" +
                                                  std::to_string(m_limits.instructionsPerTick) + " per tick)"
                                            : m_budgetMessage;
        }
        else
        {
            result = CallStatus::Error;
            std::string message;
            if (status == LUA_ERRMEM)
            {
                message = "not enough memory (the script's cap is " + std::to_string(m_limits.memoryBytes) +
                          " bytes)";
            }
            else if (lua_type(L, -1) == LUA_TSTRING)
            {
                std::size_t length = 0;
                const char* text = lua_tolstring(L, -1, &length);
                message.assign(text, length);
            }
            else
            {
                message = std::string("(error object is a ") + luaL_typename(L, -1) + " value)";
            }
            if (message.compare(0, m_shortSource.size(), m_shortSource) != 0)
            {
                message = m_shortSource + ": " + message;
            }
            error = printableExcerpt(message, kMaxErrorBytes);
        }
        lua_settop(L, top);
        if (status == LUA_ERRMEM)
        {
            lua_gc(L, LUA_GCCOLLECT); // give the memory back before the next hook (finalizers are charged)
        }
    }
    lua_settop(L, top);
    m_running = outer;
    return result;
}

LogicStats Sandbox::stats() const
{
    LogicStats stats;
    stats.budgetStops = m_budgetStops;
    stats.memoryRefusals = m_memoryRefusals;
    stats.memoryBytes = m_bytes;
    return stats;
}

} // namespace polytope::server::lua
