#include "polytope/physics/island.h"

namespace polytope::physics
{

void IslandBuilder::reset(std::uint32_t count)
{
    m_parent.resize(count);
    for (std::uint32_t i = 0; i < count; ++i)
    {
        m_parent[i] = i;
    }
}

std::uint32_t IslandBuilder::find(std::uint32_t i)
{
    while (m_parent[i] != i)
    {
        m_parent[i] = m_parent[m_parent[i]];
        i = m_parent[i];
    }
    return i;
}

void IslandBuilder::flatten()
{
    // unite() hangs the larger representative under the smaller and find() only shortcuts to ancestors, so
    // every parent is at or below its child: in increasing order, a parent is final before its children.
    for (std::uint32_t i = 0; i < static_cast<std::uint32_t>(m_parent.size()); ++i)
    {
        m_parent[i] = m_parent[m_parent[i]];
    }
}

void IslandBuilder::unite(std::uint32_t a, std::uint32_t b)
{
    const std::uint32_t ra = find(a);
    const std::uint32_t rb = find(b);
    if (ra < rb)
    {
        m_parent[rb] = ra;
    }
    else if (rb < ra)
    {
        m_parent[ra] = rb;
    }
}

} // namespace polytope::physics
