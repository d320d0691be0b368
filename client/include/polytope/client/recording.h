// Polytope client library: recordings of what a client received, and reading them back.
//
// File layout (docs/INSPECT.md has the details; client/schema/recording.fbs the records):
//   record*  footer?
// Every record is a size-prefixed FlatBuffer (4-byte little-endian length, then a buffer whose root is a
// recording::Record, identifier "PLTR"). The first record is the Header; then one Frame record per snapshot,
// and, among them, one RecordedGeometry record per distinct geometry (hull, mesh, heightfield, compound) the
// client completed, written before the next frame; on close, one FrameIndex record (tick, offset and server
// time of every frame; hash and offset of every geometry) and a fixed 16-byte footer: the index record's file
// offset (u64 LE), the frame count (u32 LE), then kRecordingFooterMagic (u32 LE). The writer flushes after
// every record, so a crash loses at most the record being written; a file without a valid footer (cut short)
// is read by scanning its records, up to the first incomplete or invalid one.
//
// Bodies are stored as floats, exactly as the client dequantized them, not as quantization codes: a replay
// then shows bit for bit what the live client showed, and a reader (the viewer) needs neither the codec nor
// the session's quantization. The price is size: 50 bytes a body against about 16 for the codes. Geometry is
// stored by content hash, exactly the bytes the server sent, so that a geometry shared by many bodies is in
// the file once; each frame names its bodies' hashes (8 bytes a body, only in frames where some body has
// one).
//
// The reader treats the file as untrusted: every record is bounds-checked against the file and verified with
// flatbuffers::Verifier, frames are checked (shape kinds, finite numbers, ids strictly increasing,
// generations non-zero), and any failure comes back as false with a message; it never throws or aborts.
// Geometry is read whole at open, within a cap on its total bytes (the client's, kMaxClientGeometryBytes):
// each must hash to its name and verify and decode (protocol::decodeGeometry), else open() refuses the file,
// naming the record's offset.
//
// Version 2 added the geometry. A version-1 reader would stop its scan of an unclosed version-2 file at the
// first geometry record (right after the header) and show nothing, so the version says so; this reader reads
// version 1 (no geometry) as well.
#pragma once

#include "polytope/client/client.h"
#include "polytope/protocol/geometry.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace polytope::recording
{
struct RecordedGeometry; // recording_generated.h
}

namespace polytope::client
{

inline constexpr std::uint32_t kRecordingMagic = 0x52544c50u;       ///< "PLTR" read as little-endian u32
inline constexpr std::uint32_t kRecordingFooterMagic = 0x58444950u; ///< "PIDX" read as little-endian u32
inline constexpr std::uint16_t kRecordingVersion = 2;
inline constexpr std::uint16_t kOldestRecordingVersion = 1; ///< the oldest version the reader reads
inline constexpr std::size_t kRecordingFooterBytes = 16;
/// Records larger than this are refused (a corrupt length must not make the reader allocate gigabytes).
inline constexpr std::uint32_t kMaxRecordBytes = 64u << 20;

/// What the Header record says.
struct RecordingHeader
{
    std::string scene;
    std::string server;
    int tickRateHz = 60;
    int snapshotRateHz = 20;
    protocol::PositionQuantization quantization;
    std::uint32_t clientId = 0;
    std::uint64_t firstTick = 0;
    double createdUnixSeconds = 0.0;

    /// From a connected client's session.
    static RecordingHeader fromClient(const Client& client, const std::string& server);
};

/// One entry of the frame index.
struct RecordingFrameInfo
{
    std::uint64_t tick = 0;
    std::uint64_t offset = 0; ///< file offset of the frame's size prefix
    double serverTime = 0.0;
};

/// Where one geometry is stored.
struct RecordingGeometryInfo
{
    std::uint64_t hash = 0;
    std::uint64_t offset = 0; ///< file offset of the RecordedGeometry record's size prefix
};

class RecordingWriter
{
  public:
    RecordingWriter() = default;
    ~RecordingWriter(); ///< closes (index and footer) when still open
    RecordingWriter(const RecordingWriter&) = delete;
    RecordingWriter& operator=(const RecordingWriter&) = delete;

    /// Creates (truncates) the file and writes the header. False with a message on failure.
    bool open(const std::string& path, const RecordingHeader& header, std::string& error);
    /// Appends one snapshot (its `bodies` with their geometry hashes; `quantized` is not stored) and flushes.
    /// Call writeGeometry() first, so that the geometry the client holds precedes the frames naming it.
    bool write(const ReceivedSnapshot& snapshot, std::string& error);
    /// Appends every geometry of `geometry` (a client's, complete and verified) not yet in the file, each
    /// once per file, and flushes.
    bool writeGeometry(const protocol::GeometryAssembler& geometry, std::string& error);
    /// Appends one geometry unless the file holds its hash already. `geometry.bytes` must hash to
    /// `geometry.hash` (protocol::geometryHash): the reader refuses the file otherwise.
    bool writeGeometry(const protocol::ReceivedGeometry& geometry, std::string& error);
    /// Writes the index and the footer and closes the file.
    bool close(std::string& error);

    bool isOpen() const { return m_file != nullptr; }
    std::uint64_t framesWritten() const { return m_index.size(); }
    std::uint64_t geometryWritten() const { return m_geometryIndex.size(); }
    std::uint64_t bytesWritten() const { return m_offset; }

  private:
    bool writeRecord(std::span<const std::uint8_t> sizePrefixed, std::string& error);

    std::FILE* m_file = nullptr;
    std::uint64_t m_offset = 0;
    std::vector<RecordingFrameInfo> m_index;
    std::vector<RecordingGeometryInfo> m_geometryIndex;
    std::map<std::uint64_t, std::uint64_t> m_geometryOffsets; ///< hashes written, to their offsets
};

class RecordingReader
{
  public:
    /// `geometryCapBytes`: the most geometry bytes a file may hold (settable for tests); past it the file
    /// is refused.
    explicit RecordingReader(std::size_t geometryCapBytes = protocol::kMaxClientGeometryBytes)
        : m_geometryCapBytes(geometryCapBytes)
    {
    }
    ~RecordingReader();
    RecordingReader(const RecordingReader&) = delete;
    RecordingReader& operator=(const RecordingReader&) = delete;

    /// Opens a file: checks the header, then reads the index through the footer, or rebuilds it by scanning
    /// when there is no valid footer, and reads and verifies every geometry. False with a message when the
    /// file is not a readable recording or holds a geometry that fails its checks.
    bool open(const std::string& path, std::string& error);
    /// The same on bytes in memory (copied; for tests and the fuzz target).
    bool openMemory(std::span<const std::uint8_t> bytes, std::string& error);

    const RecordingHeader& header() const { return m_header; }
    /// Every frame, in file order.
    const std::vector<RecordingFrameInfo>& index() const { return m_index; }
    std::size_t frameCount() const { return m_index.size(); }
    /// True when the footer was missing or unusable and the index was rebuilt by scanning.
    bool indexRebuilt() const { return m_indexRebuilt; }
    /// Why a scan stopped early (a cut-short or corrupt tail), or why the footer was not used; empty when
    /// the file was whole.
    const std::string& warning() const { return m_warning; }
    std::uint64_t fileBytes() const { return m_fileBytes; }
    std::uint16_t version() const { return m_version; }

    /// The geometry the recording holds, by hash, verified and decoded; a body's SnapshotBody::geometry names
    /// its entry here (when the recorder held it: a hash may name a geometry the file lacks).
    const std::map<std::uint64_t, protocol::ReceivedGeometry>& geometry() const { return m_geometry; }
    /// Where each geometry is stored, in file order.
    const std::vector<RecordingGeometryInfo>& geometryIndex() const { return m_geometryIndex; }
    /// Bytes of every geometry held (within the cap).
    std::size_t geometryBytes() const { return m_geometryBytes; }

    /// Reads frame `i` (0-based) into `out` (bodies filled; `quantized` left empty). False with a message
    /// when i is out of range or the record is corrupt.
    bool readFrame(std::size_t i, ReceivedSnapshot& out, std::string& error);
    /// Index of the first frame with tick >= `tick` (frameCount() when none).
    std::size_t findTick(std::uint64_t tick) const;
    /// Index of the last frame with server time <= `serverTime` (0 when none).
    std::size_t findServerTime(double serverTime) const;

  private:
    bool start(std::string& error);
    /// Reads the size-prefixed record at `offset` into m_record; sets `next` to the offset after it.
    bool readRecord(std::uint64_t offset, std::uint64_t limit, std::uint64_t& next, std::string& error);
    /// Reads the index through the footer. False with why (the caller scans then); `fatal` set when a
    /// geometry it names is refused (no scan then: the file is refused).
    bool readFooterIndex(std::string& error, bool& fatal);
    /// Rebuilds the index by scanning from `from`. False with a message only when a geometry is refused.
    bool scan(std::uint64_t from, std::string& error);
    /// Checks and keeps the geometry in m_record (a verified RecordedGeometry at `offset`). False with why.
    bool addGeometry(const recording::RecordedGeometry& recorded, std::uint64_t offset, std::string& error);
    void closeFile();

    std::FILE* m_file = nullptr;
    std::vector<std::uint8_t> m_memory;
    std::uint64_t m_fileBytes = 0;
    std::uint64_t m_firstFrameOffset = 0;
    RecordingHeader m_header;
    std::vector<RecordingFrameInfo> m_index;
    bool m_indexRebuilt = false;
    std::string m_warning;
    std::vector<std::uint8_t> m_record; ///< the last record read (size prefix included)
    std::uint16_t m_version = 0;
    std::size_t m_geometryCapBytes;
    std::size_t m_geometryBytes = 0;
    std::map<std::uint64_t, protocol::ReceivedGeometry> m_geometry;
    std::vector<RecordingGeometryInfo> m_geometryIndex;
};

/// A summary of a recording (polytope-inspect stats).
struct RecordingSummary
{
    std::uint64_t frames = 0;
    std::uint64_t firstTick = 0;
    std::uint64_t lastTick = 0;
    double durationSeconds = 0.0;    ///< server time, last frame minus first
    double receiveSpanSeconds = 0.0; ///< recorder's clock, last frame minus first
    double meanBodies = 0.0;
    std::size_t maxBodies = 0;
    std::uint64_t snapshotBytes = 0; ///< datagram bytes of every frame, as received
    std::uint64_t fileBytes = 0;
    double snapshotsPerSecond = 0.0;    ///< (frames - 1) / durationSeconds
    std::uint64_t expectedTickStep = 0; ///< tickRateHz / snapshotRateHz (at least 1)
    std::uint64_t gaps = 0;             ///< consecutive frames further apart than expectedTickStep
    std::uint64_t missingSnapshots = 0; ///< snapshots the gaps skipped
    double largestGapSeconds = 0.0;     ///< server time
    std::uint64_t corruptFrames = 0;    ///< frames that could not be read
    /// Every geometry stored or named: stored ones with their bytes, named ones the file lacks (the recorder
    /// did not hold them) with bytes 0 and stored false; bodies: distinct (id, generation) naming it.
    struct Geometry
    {
        std::uint64_t hash = 0;
        protocol::wire::ShapeKind kind = protocol::wire::ShapeKind::Hull;
        std::size_t bytes = 0;
        std::uint64_t bodies = 0;
        bool stored = false;
    };
    std::vector<Geometry> geometry; ///< by hash
};

/// Reads every frame once. `progress` (may be empty) is called with (frames done, frames) now and then.
RecordingSummary summarizeRecording(RecordingReader& reader,
                                    const std::function<void(std::size_t, std::size_t)>& progress = {});

} // namespace polytope::client
