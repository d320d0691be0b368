// Polytope client library: the connection to a server, independent of sockets and clocks.
//
// Like the server core, the Client is driven from outside: receive() for every datagram from the server,
// update() with the current time, and it sends through the SendFunction it was given. UdpClient
// (udp_client.h) binds it to a real socket; tests use the in-process NetworkSimulator and a test clock.
//
// The handshake (protocol/STANDARD.md): ConnectRequest -> Challenge -> ChallengeResponse (echoing the
// cookie) -> ConnectAccepted, which carries the snapshot codec's parameters. Snapshot slices are decoded as
// they arrive against the complete ticks kept (protocol::SnapshotReceiver) and acknowledged only once
// decoded; a complete tick is handed out at once, except that the first waits until the shape catalogue names
// every body in it (later, a body whose entry is late is left out of that snapshot's `bodies`). A slice whose
// decoded bodies fail its checksum is counted, neither kept nor acknowledged, and from then on every
// ClientInput and KeepAlive asks the server for a full snapshot (header flag FullSnapshotRequest) until a
// slice without a baseline of a later tick has decoded. Inputs are
// queued with sendInput() and repeated in every ClientInput datagram until the server acknowledges one
// that carried them. The client sends a ClientInput (which also carries the packet acks) whenever
// something arrived, at most every ackIntervalSeconds, and a KeepAlive when idle.
//
// Round trip and loss. Every datagram sent is remembered by its packet sequence with its send time; the
// first time a server header names a sequence as its newest `ack`, now - sendTime is an RTT sample, smoothed
// as in RFC 6298 (SRTT and RTTVAR with gains 1/8 and 1/4). The server acknowledges only when it next sends
// something (a snapshot at its snapshot rate, or a catalogue or keep-alive), so a sample is the network round
// trip PLUS the time our datagram waited in the server for that send: up to one snapshot interval (50 ms at
// 20 Hz, 17 ms at 60 Hz). Nothing is subtracted for it. A sent datagram not acknowledged within
// lossTimeoutSeconds counts as lost; the server's header acknowledges only the 33 newest sequences it has
// received, so more than 33 datagrams sent between two of its packets would count as lost too (the client
// sends about one per server packet). Loss of the server's datagrams is read from gaps in its sequences.
#pragma once

#include "polytope/protocol/geometry.h"
#include "polytope/protocol/packet.h"
#include "polytope/protocol/seal.h"
#include "polytope/protocol/snapshot_channel.h"
#include "polytope/protocol/token.h"

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace polytope::client
{

using SendFunction = std::function<void(std::span<const std::uint8_t> datagram)>;

struct ClientConfig
{
    std::string name = "polytope-client";    ///< sent in the connect request (logs)
    double connectTimeoutSeconds = 5.0;      ///< give up when no accept arrives within this
    double connectResendSeconds = 0.1;       ///< resend the connect request / challenge response this often
    double keepAliveSeconds = 1.0;           ///< send a keep-alive this often when nothing else is sent
    double ackIntervalSeconds = 1.0 / 120.0; ///< acknowledge (and resend inputs) at most this often
    double serverTimeoutSeconds = 10.0;      ///< connection lost when the server is silent this long
    std::size_t maxQueuedSnapshots = 256;    ///< older complete snapshots are dropped past this
    std::size_t maxPendingInputs = 1024; ///< inputs waiting for acknowledgement; sendInput refuses past this
    std::size_t maxPendingGameMessages = 256; ///< game messages waiting; sendGameMessage refuses past this
    double lossTimeoutSeconds = 2.0;          ///< a sent datagram not acknowledged within this counts as lost
    std::string room;                         ///< the room to join; empty: the server's first room
    std::uint16_t snapshotRateHz = 0;         ///< snapshots per second wanted; 0: the room's rate
    bool spectator = false; ///< watch only: the server spawns no player body for this client
    /// Compressed (the default; what players use) or Structured: plain FlatBuffers tables any language reads
    /// (protocol/STANDARD.md section 14), several times the bytes.
    protocol::wire::SnapshotFormat snapshotFormat = protocol::wire::SnapshotFormat::Compressed;
    bool snapshotVelocities = false; ///< Structured only: bodies come with their velocities
    /// The connect token from the game's backend (polytope-token). With one, the session is sealed: keys come
    /// from the token and the challenge's salt, and every datagram after the handshake is encrypted and
    /// authenticated (protocol/STANDARD.md §11). Without one, only an --insecure server accepts the client.
    std::optional<protocol::ConnectToken> token;
};

enum class ClientState : std::uint8_t
{
    Disconnected = 0, ///< not started, or disconnect() called
    Connecting,       ///< sending connect requests, then challenge responses
    Connected,        ///< accepted; receiving snapshots
    ConnectTimedOut,  ///< nothing answered within connectTimeoutSeconds
    ConnectionDenied, ///< the server refused (e.g. full)
    ConnectionLost,   ///< the server went silent for serverTimeoutSeconds
    ServerClosed,     ///< the server said goodbye
};

const char* clientStateName(ClientState state);

/// A body of a decoded snapshot: dequantized pose plus its shape from the catalogue.
struct SnapshotBody
{
    std::uint32_t id = 0;
    std::uint32_t generation = 0;
    protocol::wire::ShapeKind shape = protocol::wire::ShapeKind::Sphere;
    bool atRest = false;
    std::array<float, 3> position{};                          ///< metres (quantized: error <= half a step)
    std::array<float, 4> orientation{0.0f, 0.0f, 0.0f, 1.0f}; ///< x, y, z, w
    std::array<float, 3> extent{};                            ///< see protocol::CatalogueEntry
    std::uint64_t geometry = 0; ///< hash of its geometry (Client::geometry()), 0: none (a primitive)
    /// With structured snapshots and velocities: the velocities the body was last listed with (m/s, rad/s).
    protocol::BodyVelocity velocity;
};

/// A whole snapshot (all of its slices), decoded.
struct ReceivedSnapshot
{
    std::uint64_t tick = 0;
    double serverTime = 0.0;            ///< seconds, server's simulation clock
    double receiveTime = 0.0;           ///< seconds, the client's clock, when it became complete and showable
    std::size_t bytes = 0;              ///< datagram bytes of all its slices
    std::vector<SnapshotBody> bodies;   ///< sorted by id; only bodies whose shape is known
    std::size_t bodiesWithoutShape = 0; ///< decoded bodies left out: catalogue entry not here yet
    std::vector<protocol::QuantizedBody> quantized; ///< the same bodies exactly as decoded
};

/// What the client was showing when it sends a game message (lag compensation, STANDARD.md section 15):
/// between the snapshots of fromTick and toTick at fraction (InterpolationBuffer's Frame says which).
struct ViewTime
{
    std::uint64_t fromTick = 0;
    std::uint64_t toTick = 0;
    float fraction = 0.0f;
};

/// A game state the room's logic sent (STANDARD.md section 15): the newest version received, whole.
struct GameState
{
    std::uint32_t version = 0; ///< 0: none received yet
    std::vector<std::uint8_t> data;
};

struct ClientStats
{
    std::uint64_t datagramsReceived = 0; ///< accepted
    std::uint64_t bytesReceived = 0;     ///< every datagram, accepted or not
    std::uint64_t datagramsSent = 0;
    std::uint64_t bytesSent = 0;
    std::uint64_t slicesDecoded = 0;
    std::uint64_t duplicateSlices = 0;     ///< slices of a tick or range already decoded
    std::uint64_t staleSlices = 0;         ///< slices too old to decode
    std::uint64_t snapshotsCompleted = 0;  ///< ticks with every slice decoded
    std::uint64_t snapshotsShown = 0;      ///< handed out by popSnapshot's queue
    std::uint64_t bodiesWithoutShape = 0;  ///< bodies left out of shown snapshots for want of their shape
    std::uint64_t snapshotsSuperseded = 0; ///< complete but older than one already shown, or replaced while
                                           ///< waiting for the catalogue
    std::uint64_t catalogueEntries = 0;    ///< catalogue entries received (duplicates included)
    std::uint64_t catalogueStale = 0; ///< entries older than what the client knew (late duplicates), ignored
    std::uint64_t inputsSent = 0;     ///< inputs queued by sendInput
    std::uint64_t inputsAcknowledged = 0;
    std::uint64_t gameMessagesSent = 0; ///< queued by sendGameMessage
    std::uint64_t gameMessagesAcknowledged = 0;
    std::uint64_t gameStatesReceived = 0; ///< GameState datagrams, repeats included
    std::uint64_t gameStatesStale = 0;    ///< older than (or the same version as) what the client holds
    std::array<std::uint64_t, protocol::kCodecErrorCount> sliceErrors{}; ///< by protocol::CodecError
    /// Slices that decoded to another state than their checksum describes (also in
    /// sliceErrors[CodecError::ChecksumMismatch]): each a decoder disagreeing with the server's encoder.
    std::uint64_t checksumMismatches = 0;
    std::uint64_t fullSnapshotRequests = 0; ///< datagrams sent asking for a full snapshot
    protocol::DropCounters drops;

    // Round trip and loss (see the file comment). Datagrams sent while connecting are not counted as lost.
    std::uint64_t rttSamples = 0; ///< RTT samples taken
    std::uint64_t packetsAcknowledged =
        0;                         ///< our datagrams the server acknowledged within lossTimeoutSeconds
    std::uint64_t packetsLost = 0; ///< our datagrams not acknowledged within lossTimeoutSeconds
    std::uint64_t serverPacketsReceived = 0; ///< distinct server sequences received since the session opened
    std::uint64_t serverPacketsMissing = 0;  ///< server sequences skipped and not (yet) arrived
};

class Client
{
  public:
    Client(const ClientConfig& config, SendFunction send);

    /// Starts the handshake.
    void connect(double now);
    /// Handles one datagram from the server.
    void receive(std::span<const std::uint8_t> datagram, double now);
    /// Resends, acknowledges, keeps alive and checks time-outs.
    void update(double now);
    /// Says goodbye (several times, as UDP may lose it) and stops.
    void disconnect(double now);

    /// Queues an input (its sequence is assigned here and returned; 0 when refused: not connected, invalid,
    /// or too many pending). It is sent with the next update and repeated until acknowledged.
    std::uint32_t sendInput(const protocol::InputCommand& input);

    ClientState state() const { return m_state; }
    bool isConnected() const { return m_state == ClientState::Connected; }
    /// True once the connection has ended for any reason (time-out, denial, server closed, lost).
    bool isFinished() const;
    std::uint32_t clientId() const { return m_session.clientId; }
    int tickRateHz() const { return m_session.tickRateHz; }
    int snapshotRateHz() const { return m_session.snapshotRateHz; }
    const std::string& sceneName() const { return m_session.scene; }
    /// What ConnectAccepted announced.
    const protocol::SessionParameters& session() const { return m_session; }
    const ClientStats& stats() const { return m_stats; }
    /// The snapshot decoder's store of complete ticks (nullptr before the session opens).
    const protocol::SnapshotReceiver* receiver() const { return m_receiver.get(); }
    /// Known shapes by body id.
    const std::map<std::uint32_t, protocol::CatalogueEntry>& catalogue() const { return m_catalogue; }
    /// Geometry received (hulls, meshes, heightfields, compounds), by content hash, with its counts of
    /// refused slices; a body's SnapshotBody::geometry names its entry here once it has arrived.
    const protocol::GeometryAssembler& geometry() const { return m_geometry; }
    /// The bodies this client owns and may send inputs for (catalogue entries flagged owned), by id.
    std::vector<protocol::CatalogueEntry> ownedBodies() const;
    /// Inputs sent and not yet acknowledged.
    std::size_t pendingInputs() const { return m_pendingInputs.size(); }

    /// Takes the oldest complete snapshot not yet taken. Returns false when there is none.
    bool popSnapshot(ReceivedSnapshot& out);
    /// Why the server refused the connection (state ConnectionDenied), if it said.
    std::optional<protocol::wire::DenyReason> denyReason() const { return m_denyReason; }
    /// The reason the server gave with a denial (RefusedByGame) or a disconnect (Kicked, RoomStopped).
    const std::string& serverMessage() const { return m_serverMessage; }
    /// Why the server ended the session (state ServerClosed), if it said.
    std::optional<protocol::wire::DisconnectReason> disconnectReason() const { return m_disconnectReason; }

    // ---- Game rules (STANDARD.md section 15)
    /// Queues a message for the room's game logic, for server tick `tick`, sent reliably (repeated in
    /// every ClientInput until acknowledged) and delivered to the logic once. `view`: what the client
    /// showed (lag-compensated hits). Returns its sequence, or 0 when not connected, empty, larger than
    /// kMaxGameMessageBytes, or maxPendingGameMessages are waiting.
    std::uint32_t sendGameMessage(std::span<const std::uint8_t> data, std::uint64_t tick,
                                  const ViewTime& view = {});
    std::size_t pendingGameMessages() const { return m_pendingMessages.size(); }
    /// The room's public game state and this client's own, as last received.
    const GameState& roomState() const { return m_roomState; }
    const GameState& playerState() const { return m_playerState; }
    /// True while the client asks the server for a full snapshot (after a checksum mismatch).
    bool wantsFullSnapshot() const { return m_wantFullSnapshot; }

    /// Tests only: alters decoded slices before their checksum is checked, standing for a wrong decoder
    /// (protocol::SnapshotDecoder::setFaultForTesting); kept across the session's start.
    void setDecodeFaultForTesting(protocol::SnapshotDecoder::FaultForTesting fault);

    /// Smoothed round-trip time in seconds (RFC 6298 SRTT); 0 before the first sample. Includes the server's
    /// acknowledgement delay of up to one snapshot interval (see the file comment).
    double rttSeconds() const { return m_srtt; }
    /// RFC 6298 RTTVAR: the smoothed mean deviation of the samples, seconds.
    double rttVariationSeconds() const { return m_rttVar; }
    /// The newest sample, seconds; 0 before the first.
    double lastRttSeconds() const { return m_rttHistory.empty() ? 0.0 : m_rttHistory.back(); }
    /// The last kRttHistory samples, oldest first, seconds.
    const std::deque<double>& rttSamples() const { return m_rttHistory; }
    /// Share of our datagrams lost, over the last kLossWindow resolved (acknowledged or timed out) while
    /// connected; 0 before any is resolved.
    double lossFraction() const;
    /// Share of the server's datagrams missing among its last kLossWindow sequences; 0 before any arrived.
    double receiveLossFraction() const;

    static constexpr std::size_t kRttHistory = 256;
    static constexpr std::size_t kLossWindow = 256;

  private:
    struct InputDatagram
    {
        std::uint16_t sequence = 0;
        std::uint32_t firstInput = 0; ///< input sequences [firstInput, lastInput] it carried
        std::uint32_t lastInput = 0;
        bool valid = false;
        std::uint32_t firstMessage = 0; ///< game message sequences carried (0, 0: none)
        std::uint32_t lastMessage = 0;
    };
    struct PendingMessage
    {
        protocol::GameMessageFields fields; ///< data views `bytes`
        std::vector<std::uint8_t> bytes;
    };
    void onGameState(const protocol::wire::GameState& message);
    void send(std::span<const std::uint8_t> datagram, double now);
    /// The ConnectRequest, or the ChallengeResponse once a cookie arrived.
    std::span<const std::uint8_t> connectMessage();
    void sendAcknowledgement(double now);
    /// The next outgoing header, with the full-snapshot request while one is wanted.
    protocol::HeaderFields nextSessionHeader();
    void onServerAcks(const protocol::wire::PacketHeader& header);
    void onPacketAcks(const protocol::wire::PacketHeader& header, double now);
    void onServerSequence(std::uint16_t sequence);
    void resolveSent(double now, bool force);
    void addRttSample(double seconds);
    bool onSnapshot(const protocol::wire::Snapshot& slice, std::size_t bytes, double now);
    bool onStructuredSnapshot(const protocol::wire::StructuredSnapshot& message, std::size_t bytes,
                              double now);
    /// What a decoded, applied or refused slice of `tick` does to the client; true: acknowledge it.
    bool onSliceOutcome(const protocol::SliceOutcome& outcome, std::uint64_t tick, double serverTime,
                        std::size_t bytes, double now);
    void onCatalogue(const protocol::wire::Catalogue& message, double now);
    bool tryShow(std::uint64_t tick, double now);

    ClientConfig m_config;
    SendFunction m_send;
    protocol::PacketWriter m_writer;
    protocol::AckTracker m_acks;
    ClientState m_state = ClientState::Disconnected;
    std::optional<protocol::wire::DenyReason> m_denyReason;
    std::optional<protocol::wire::DisconnectReason> m_disconnectReason;
    std::string m_serverMessage;
    double m_connectStartTime = 0.0;
    double m_lastSendTime = -1e9;
    double m_lastReceiveTime = 0.0;
    bool m_receivedSinceAck = false;
    int m_recordedSinceAck = 0;                   ///< snapshot datagrams recorded since the last ClientInput
    double m_burstStartTime = 0.0;                ///< when the first of them arrived
    std::vector<std::uint8_t> m_cookie;           ///< from the first Challenge, echoed until accepted
    protocol::TokenCredentialFields m_credential; ///< from config.token
    protocol::SealedChannel m_channel;            ///< active from the Challenge on, with a token
    protocol::SessionParameters m_session;
    ClientStats m_stats;

    std::unique_ptr<protocol::SnapshotReceiver> m_receiver;
    protocol::SnapshotDecoder::FaultForTesting m_decodeFault;
    bool m_wantFullSnapshot = false;  ///< a slice failed its checksum; no full slice of a later tick since
    std::uint64_t m_mismatchTick = 0; ///< the tick of the newest such slice
    std::map<std::uint64_t, std::pair<std::size_t, double>> m_tickBytes; ///< per incomplete tick: bytes, time
    std::map<std::uint32_t, protocol::CatalogueEntry> m_catalogue;
    std::map<std::uint32_t, std::uint32_t> m_removedGenerations; ///< per slot: the newest generation removed
    std::vector<protocol::CatalogueEntry> m_catalogueScratch;
    protocol::GeometryAssembler m_geometry;
    protocol::StructuredSlice m_structuredScratch;
    struct ListedVelocity
    {
        std::uint32_t generation = 0;
        std::uint64_t tick = 0;
        protocol::BodyVelocity velocity;
    };
    std::map<std::uint32_t, ListedVelocity> m_velocities; ///< by id: the newest listed (structured mode)
    bool m_anyShown = false;
    std::uint64_t m_lastShownTick = 0;
    bool m_waiting = false; ///< a complete tick waits for catalogue entries
    std::uint64_t m_waitingTick = 0;
    std::deque<ReceivedSnapshot> m_complete;

    std::uint32_t m_nextInputSequence = 1;
    std::deque<protocol::InputCommand> m_pendingInputs; ///< by sequence
    std::uint32_t m_nextMessageSequence = 1;
    std::deque<PendingMessage> m_pendingMessages; ///< by sequence
    std::vector<protocol::GameMessageFields> m_messageScratch;
    GameState m_roomState;
    GameState m_playerState;
    std::vector<InputDatagram> m_inputDatagrams; ///< by packet sequence mod 256

    struct SentDatagram
    {
        std::uint16_t sequence = 0;
        double sendTime = 0.0;
        bool acknowledged = false;
        bool countsForLoss = false; ///< sent while connected
    };
    std::vector<SentDatagram> m_sent;  ///< ring, by count of datagrams sent
    std::uint64_t m_sentCount = 0;     ///< datagrams sent; m_sent[(m_sentCount - 1) % size] is the newest
    std::uint64_t m_resolvedCount = 0; ///< the oldest m_resolvedCount are acknowledged or counted lost
    double m_srtt = 0.0;
    double m_rttVar = 0.0;
    std::deque<double> m_rttHistory;
    std::array<bool, kLossWindow> m_lossOutcomes{}; ///< true: lost; by resolved count mod kLossWindow
    std::size_t m_lossOutcomeCount = 0;
    std::size_t m_lossOutcomeNext = 0;
    bool m_anyServerSequence = false;
    std::int64_t m_firstServerSequence = 0;           ///< unwrapped
    std::int64_t m_newestServerSequence = 0;          ///< unwrapped
    std::array<bool, kLossWindow> m_serverReceived{}; ///< by unwrapped server sequence mod kLossWindow
};

} // namespace polytope::client
