// polytope-server: the Lua state a scripted room logic runs in, and the limits it runs under.
//
// Why these mechanisms (Lua 5.4 reference manual, sections 4.7 on lua_Alloc and 4.8 on lua_sethook):
//  - Memory: the state is made by lua_newstate with our own allocator, which counts the bytes held and
//    refuses to grow past LuaLimits::memoryBytes (Lua then raises "not enough memory", which a hook
//    reports as an error; the script keeps working once the memory is freed). Shrinking never fails, as
//    the manual requires.
//  - Time: a count hook runs every kHookInterval VM instructions and charges them to the tick's budget.
//    The budget is spent when it is exceeded: the hook raises an error, and keeps raising one at every
//    later count while the tick lasts, so a script cannot spin inside its own pcall. pcall, xpcall and
//    coroutine.resume/close are wrapped to raise the stop again when what they caught was one, and xpcall's
//    message handler is not called once the budget is spent (Lua calls it again for an error inside it).
//  - Errors and yields: compiled as C++, Lua throws a C++ exception for each, a microsecond or more, so
//    protected calls and yields are charged kThrowInstructions each.
//  - Work the hook cannot see: a library function runs as one instruction however long its arguments.
//    So library functions are charged for their arguments (a byte of string per kBytesPerInstruction, an
//    element of table per instruction, string.rep's count, table.sort's n log n), and every byte the
//    allocator grows by is charged as well, which bounds copying (concatenation, string building). Once the
//    budget is spent by a margin (kOverdraftInstructions), growth is refused outright. Lua patterns are
//    removed: their backtracking cost has no bound we could charge in advance (string.find keeps plain
//    search). Comparing two long strings (<, ==) is still one instruction whatever their length: a known
//    limit (docs/GAME_RULES_LUA.md).
//  - Finalizers: Lua runs __gc metamethods with hooks off, beyond the budget's reach, so setmetatable
//    refuses a metatable with a __gc field (only then is an object marked for finalization).
//  - Access: only the base, table, string, math, utf8 and coroutine libraries are opened, and of those
//    dofile, loadfile, load, collectgarbage (except "count"), string.dump and math.randomseed without a
//    seed are removed. There is no io, os, package/require or debug. Scripts are loaded as text only
//    (mode "t": precompiled bytecode can break the VM's invariants).
//  - Determinism: no clock; math.random is seeded with a fixed seed (kRandomSeed) when the state is made.
//    Lua seeds its string hashes from the clock and addresses, so next() visits string keys in an order
//    that changes between runs: pairs is replaced by one that visits keys in a defined order.
#pragma once

#include "polytope/server/lua_logic.h"

#include <lua.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace polytope::server::lua
{

/// VM instructions between two runs of the count hook.
inline constexpr int kHookInterval = 1000;
/// Bytes of argument scanned, or of memory allocated, charged as one instruction.
inline constexpr std::uint64_t kBytesPerInstruction = 8;
/// What a protected call (pcall, xpcall, coroutine.resume/close) and a yield are charged, in instructions:
/// about what the C++ exception of an error or yield caught there costs (Lua compiled as C++ throws one).
inline constexpr std::uint64_t kThrowInstructions = 250;
/// Once the budget is exceeded by this many instructions' worth (from allocation), growth is refused.
inline constexpr std::uint64_t kOverdraftInstructions = 100'000;
/// The seed of math.random in every sandbox: scripts get the same sequence every run.
inline constexpr lua_Integer kRandomSeed = 0x5eed;
/// The longest error message handed out (longer ones are cut).
inline constexpr std::size_t kMaxErrorBytes = 400;

/// One script's Lua state with its allocator, budget and library.
class Sandbox
{
  public:
    explicit Sandbox(const LuaLimits& limits);
    ~Sandbox();
    Sandbox(const Sandbox&) = delete;
    Sandbox& operator=(const Sandbox&) = delete;

    /// Null when the state could not be made (the memory cap is below what Lua needs to start).
    lua_State* state() const { return m_state; }
    /// The sandbox of a state (or of one of its coroutines).
    static Sandbox& of(lua_State* L);

    /// Compiles `text` (text only) under chunk name `name` and runs it with a full budget of its own.
    /// False with "name:line: message" when it does not compile or fails.
    bool runChunk(std::string_view text, const std::string& name, std::string& error);

    /// The outcome of a protected call.
    enum class CallStatus : std::uint8_t
    {
        Ok = 0,
        Error,      ///< a runtime or memory error; `error` says where and what
        BudgetStop, ///< the tick's instruction budget was spent; counted in stats().budgetStops
    };
    /// Calls `function` (a C function, which pushes and calls what it likes) protected, with `arg` as its
    /// only argument (a light userdata). The stack is as it was afterwards.
    CallStatus call(lua_CFunction function, void* arg, std::string& error);

    /// Starts charging tick `tick`: a tick other than the last one charged gets a full budget.
    void beginTick(std::uint64_t tick);
    /// The tick's budget is spent: its remaining hooks are skipped.
    bool spent() const { return m_spent; }
    /// A budget saved and restored around a hook with a budget of its own (onStart, onStop, onReload).
    struct Budget
    {
        std::uint64_t used = 0;
        bool spent = false;
    };
    Budget budget() const { return {m_used, m_spent}; }
    void setBudget(const Budget& budget);

    /// Charges `cost` instructions from inside a C function called by the script; raises the budget stop
    /// (a Lua error, from the calling Lua line) when the budget is spent.
    void charge(lua_State* L, std::uint64_t cost);

    LogicStats stats() const;

    /// Where print() goes; empty: dropped.
    std::function<void(std::string_view)> print;

  private:
    static void* allocate(void* ud, void* block, std::size_t oldSize, std::size_t newSize);
    static void countHook(lua_State* L, lua_Debug* ar);
    /// Raises the budget stop, placed at the Lua function `level` levels up (0: the running one).
    [[noreturn]] void raiseBudgetStop(lua_State* L, int level);
    void openLibraries();
    void chargeRaw(std::uint64_t cost);

    LuaLimits m_limits;
    lua_State* m_state = nullptr;
    bool m_running = false;    ///< a chunk or hook is running: its allocations are charged
    std::uint64_t m_bytes = 0; ///< held by the state
    std::uint64_t m_used = 0;  ///< instructions charged this tick
    bool m_spent = false;
    bool m_hasTick = false;
    std::uint64_t m_tick = 0;
    std::string m_budgetMessage; ///< "where: instruction budget spent ..." of the last stop
    std::string m_shortSource;   ///< the chunk's name as Lua prints it in messages (the script's path)
    std::uint64_t m_budgetStops = 0;
    std::uint64_t m_memoryRefusals = 0;
};

/// Raises a Lua error "function: message" from the calling Lua line. Never returns.
[[noreturn]] void raiseError(lua_State* L, const char* function, const std::string& message);

} // namespace polytope::server::lua
