// Polytope physics: FunctionRef, a non-owning reference to a callable, for callbacks that must not allocate.
//
// The world's queries report their hits through callbacks and are compiled once (world_queries.cpp), so the
// callback's type is erased. std::function may allocate and copies the callable; a FunctionRef is two words
// (an object pointer and a function pointer) and never allocates, like TaskFunction (task_pool.h) for the
// pool. It does not copy the callable: a lambda written in the argument list of the call that uses it lives
// long enough; one stored in a variable must outlive every use of the reference.
#pragma once

#include <concepts>
#include <memory>
#include <type_traits>

namespace polytope::physics
{

template <typename Signature> class FunctionRef;

/// A non-owning reference to a callable `R(Args...)`, or null (default constructed). Trivially copyable.
template <typename R, typename... Args> class FunctionRef<R(Args...)>
{
  public:
    /// The null reference: operator bool is false; calling it is a programmer error.
    constexpr FunctionRef() noexcept = default;

    template <typename Callable>
    requires(!std::same_as<std::remove_cvref_t<Callable>, FunctionRef> &&
             !std::is_function_v<std::remove_reference_t<Callable>> &&
             std::is_invocable_r_v<R, Callable&, Args...>) FunctionRef(Callable&& callable)
    noexcept // NOLINT: implicit, so that a lambda can be passed directly
        : m_object(const_cast<void*>(static_cast<const void*>(std::addressof(callable)))),
          m_invoke(&invokeAs<std::remove_reference_t<Callable>>)
    {
    }

    explicit operator bool() const noexcept { return m_invoke != nullptr; }

    R operator()(Args... args) const { return m_invoke(m_object, static_cast<Args>(args)...); }

  private:
    using Invoke = R (*)(void* object, Args... args);

    template <typename Callable> static R invokeAs(void* object, Args... args)
    {
        return static_cast<R>((*static_cast<Callable*>(object))(static_cast<Args>(args)...));
    }

    void* m_object = nullptr;
    Invoke m_invoke = nullptr;
};

} // namespace polytope::physics
