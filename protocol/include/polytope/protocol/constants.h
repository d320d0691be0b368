// Polytope wire protocol: constants every peer agrees on.
#pragma once

#include <cstddef>
#include <cstdint>

namespace polytope::protocol
{

/// "PLTP" read as a little-endian 32-bit integer. Datagrams with another id are dropped.
inline constexpr std::uint32_t kProtocolId = 0x50544C50u;
/// Bumped on every incompatible change of the schema or its meaning. Datagrams of another version are
/// dropped. Version 2: challenge handshake, delta-coded snapshot payloads, reliable shape catalogue, client
/// inputs. Version 3: rooms, per-client snapshot rates, owned bodies (catalogue flag), Spawn/Remove inputs,
/// admin; snapshot payloads carry a deceleration for extrapolation and predict created bodies from the two
/// before (CODEC.md). Version 4: connect tokens (ConnectRequest and ChallengeResponse carry a
/// TokenCredential), a per-session salt in the challenge cookie, and every datagram of a token session sealed
/// with an AEAD (STANDARD.md §11). Version 5: every snapshot slice carries a CRC-32 of the quantized state it
/// describes (CODEC.md 4.5), a client that decodes another state asks for a full snapshot (header flag
/// FullSnapshotRequest), and a ConnectRequest of another version is answered with ConnectDenied (Version).
/// Version 6: game rules (STANDARD.md section 15): GameMessage in ClientInput, GameState datagrams, and the
/// game's reasons in ConnectDenied (RefusedByGame) and Disconnect (Kicked, RoomStopped).
inline constexpr std::uint16_t kProtocolVersion = 6;
/// No datagram, in either direction, is larger than this (bytes of UDP payload).
inline constexpr std::size_t kMaxDatagramBytes = 1200;
/// No Packet FlatBuffer is larger than this, so that sealing one (28 bytes of header and tag, seal.h) still
/// fits in kMaxDatagramBytes.
inline constexpr std::size_t kMaxPacketBytes = 1172;
/// The smallest valid datagram: a FlatBuffer root offset, file identifier, table and header struct.
inline constexpr std::size_t kMinDatagramBytes = 32;
/// ConnectRequest and ChallengeResponse datagrams are padded to at least this size, and smaller ones are
/// dropped, so that no reply sent before the handshake completes is larger than the request that caused it
/// (the server cannot be used to amplify a spoofed flood).
inline constexpr std::size_t kMinConnectRequestBytes = 512;
/// Longest client name accepted in a ConnectRequest or ChallengeResponse (bytes).
inline constexpr std::size_t kMaxClientNameBytes = 64;
/// Longest scene name carried in ConnectAccepted (bytes).
inline constexpr std::size_t kMaxSceneNameBytes = 64;
/// Size of the challenge cookie the server sends and the client echoes (bytes): the session salt
/// (kCookieSaltBytes, random per challenge; both sides derive the session keys from it), a coarse time stamp
/// and a keyed hash over both and the client's address.
inline constexpr std::size_t kCookieBytes = 36;
inline constexpr std::size_t kCookieSaltBytes = 16;
/// Sizes of a TokenCredential's fields (token.h has the rest of the token's limits).
inline constexpr std::size_t kTokenCredentialNonceBytes = 24;
inline constexpr std::size_t kMaxTokenCredentialSealedBytes = 640;
/// Largest delta-coded snapshot payload in one Snapshot datagram (bytes).
inline constexpr std::size_t kMaxSnapshotPayloadBytes = 1072;
/// Most shape catalogue entries in one Catalogue datagram.
inline constexpr std::size_t kMaxCatalogueEntriesPerDatagram = 40;
/// Most inputs in one ClientInput datagram.
inline constexpr std::size_t kMaxInputsPerDatagram = 24;
/// Largest magnitude of each component of an input's vector, by kind (force N, impulse N s, torque N m,
/// target velocity m/s). Larger values are refused as out of range.
inline constexpr float kMaxInputForce = 1.0e6f;
inline constexpr float kMaxInputImpulse = 1.0e5f;
inline constexpr float kMaxInputTorque = 1.0e6f;
inline constexpr float kMaxInputVelocity = 400.0f;
/// Largest magnitude of each component of a Spawn input's position (metres); the room also checks its bounds.
inline constexpr float kMaxInputPosition = 1.0e5f;
/// Longest room name (bytes).
inline constexpr std::size_t kMaxRoomNameBytes = 64;
/// CatalogueEntry.flags bit: the receiving client owns the body.
inline constexpr std::uint16_t kCatalogueFlagOwned = 1u;
/// AdminRequest datagrams are padded to at least this size, and no AdminReply is larger.
inline constexpr std::size_t kMinAdminRequestBytes = 320;
/// Largest AdminCommand FlatBuffer inside an AdminRequest (bytes).
inline constexpr std::size_t kMaxAdminCommandBytes = 512;
/// Size of an AdminRequest's keyed hash (bytes).
inline constexpr std::size_t kAdminMacBytes = 32;
/// Longest AdminCommand.text (bytes).
inline constexpr std::size_t kMaxAdminTextBytes = 256;
/// Longest AdminReply.message (bytes): with the reply's 32-byte mac, the reply stays within
/// kMinAdminRequestBytes (no amplification).
inline constexpr std::size_t kMaxAdminMessageBytes = 176;
/// Version 6 (STANDARD.md section 15). Largest game message a client sends (bytes of `data`).
inline constexpr std::size_t kMaxGameMessageBytes = 512;
/// Most GameMessages in one ClientInput.
inline constexpr std::size_t kMaxGameMessagesPerDatagram = 8;
/// Largest game state (room or client scope): it travels whole in one GameState datagram.
inline constexpr std::size_t kMaxGameStateBytes = 1024;
/// Longest reason in ConnectDenied (RefusedByGame) and Disconnect (Kicked, RoomStopped), bytes.
inline constexpr std::size_t kMaxLogicReasonBytes = 128;
/// Largest gap between an AdminCommand's time and the server's clock (seconds).
inline constexpr double kAdminTimeWindowSeconds = 30.0;
/// Largest extent (metres) a catalogue entry may announce.
inline constexpr float kMaxShapeExtentMeters = 1.0e5f;

// Geometry on the wire (STANDARD.md section 12).
/// Most catalogue entries in a Catalogue datagram that carries geometry hashes (8 more bytes an entry).
inline constexpr std::size_t kMaxCatalogueEntriesWithGeometry = 32;
/// Bytes of geometry in every GeometrySlice but a geometry's last.
inline constexpr std::size_t kGeometrySliceBytes = 1024;
/// Largest geometry (its Geometry FlatBuffer, bytes); larger ones are not sent (the entry names hash 0).
inline constexpr std::size_t kMaxGeometryBytes = 16u << 20;
/// Geometry a client holds at most, complete and in assembly together (bytes); past it, new geometry is
/// refused and counted.
inline constexpr std::size_t kMaxClientGeometryBytes = 64u << 20;
/// Most vertices of a hull geometry (the engine's kMaxHullVertices).
inline constexpr std::size_t kMaxGeometryHullVertices = 255;
/// Most faces of a hull geometry.
inline constexpr std::size_t kMaxGeometryHullFaces = 1024;
/// Most children of a compound geometry (the engine's kMaxCompoundChildren).
inline constexpr std::size_t kMaxGeometryCompoundChildren = 64;
/// Most samples along each side of a heightfield geometry (the engine's kMaxHeightFieldSamplesPerSide).
inline constexpr std::uint32_t kMaxGeometryHeightFieldSide = 4097;

} // namespace polytope::protocol
