// Polytope physics: islands, the groups of bodies linked by touching contacts.
//
// Islands decide sleeping: an island falls asleep only when every body in it has rested long enough, and
// it wakes as a whole. The World rebuilds the awake islands every step with a union-find over the touching
// contacts between awake dynamic bodies (static and kinematic bodies do not link islands: a stack on the
// ground and another stack on the same ground are two islands). Each set's representative is its
// smallest element, so the partition and its labels depend only on the links, not on the order in which
// they were added: the result is deterministic.
#pragma once

#include <cstdint>
#include <vector>

namespace polytope::physics
{

/// Union-find over elements 0 .. count-1 (the World's body slots).
class IslandBuilder
{
  public:
    /// Reserves room for `capacity` elements, so that reset() up to that size does not allocate.
    void reserve(std::uint32_t capacity) { m_parent.reserve(capacity); }

    /// Makes every element of 0 .. count-1 its own island.
    void reset(std::uint32_t count);

    /// The representative (smallest element) of i's island. Halves paths as it goes.
    std::uint32_t find(std::uint32_t i);

    /// Joins the islands of a and b.
    void unite(std::uint32_t a, std::uint32_t b);

    /// Points every element straight at its representative, in one pass (a parent is never above its
    /// child), so that root() answers in one load until the next unite.
    void flatten();

    /// i's representative, once flatten() has run since the last unite.
    std::uint32_t root(std::uint32_t i) const { return m_parent[i]; }

    std::uint32_t size() const { return static_cast<std::uint32_t>(m_parent.size()); }

  private:
    std::vector<std::uint32_t> m_parent;
};

} // namespace polytope::physics
