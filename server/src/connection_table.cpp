#include "polytope/server/connection_table.h"

namespace polytope::server
{

ConnectionTable::ConnectionTable(std::size_t capacity) : m_slots(capacity)
{
    m_free.reserve(capacity);
    for (std::size_t i = capacity; i > 0; --i)
    {
        m_free.push_back(static_cast<ClientSlot>(i - 1));
    }
}

ClientSlot ConnectionTable::find(const protocol::Address& address) const
{
    const auto it = m_byAddress.find(address);
    return it == m_byAddress.end() ? kNoSlot : it->second;
}

ClientSlot ConnectionTable::open(const protocol::Address& address)
{
    if (m_free.empty() || m_byAddress.count(address) != 0)
    {
        return kNoSlot;
    }
    const ClientSlot slot = m_free.back();
    m_free.pop_back();
    Connection& connection = m_slots[slot];
    connection = Connection{};
    connection.used = true;
    connection.address = address;
    m_byAddress.emplace(address, slot);
    return slot;
}

void ConnectionTable::close(ClientSlot slot)
{
    Connection& connection = m_slots[slot];
    if (!connection.used)
    {
        return;
    }
    m_byAddress.erase(connection.address);
    connection = Connection{};
    m_free.push_back(slot);
}

} // namespace polytope::server
