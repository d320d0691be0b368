// Polytope wire protocol: constants every peer agrees on.
#pragma once

#include <cstddef>
#include <cstdint>

namespace polytope::protocol
{

/// "PLTP" read as a little-endian 32-bit integer. Datagrams with another id are dropped.
inline constexpr std::uint32_t kProtocolId = 0x50544C50u;
/// Bumped on every incompatible change of the schema or its meaning. Datagrams of another version are dropped.
inline constexpr std::uint16_t kProtocolVersion = 1;
/// No datagram, in either direction, is larger than this (bytes of UDP payload).
inline constexpr std::size_t kMaxDatagramBytes = 1200;
/// The smallest valid datagram: a FlatBuffer root offset, file identifier, table and header struct.
inline constexpr std::size_t kMinDatagramBytes = 32;
/// A ConnectRequest datagram is padded to at least this size, and smaller ones are dropped, so that no
/// reply sent before the handshake completes is larger than the request that caused it.
inline constexpr std::size_t kMinConnectRequestBytes = 512;
/// Longest client name accepted in a ConnectRequest (bytes).
inline constexpr std::size_t kMaxClientNameBytes = 64;
/// Longest scene name carried in ConnectAccepted (bytes).
inline constexpr std::size_t kMaxSceneNameBytes = 64;

} // namespace polytope::protocol
