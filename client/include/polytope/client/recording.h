// Polytope client library: recordings of what a client received, and reading them back.
//
// File layout (docs/INSPECT.md has the details; client/schema/recording.fbs the records):
//   record*  footer?
// Every record is a size-prefixed FlatBuffer (4-byte little-endian length, then a buffer whose root is a
// recording::Record, identifier "PLTR"). The first record is the Header; then one Frame record per snapshot;
// on close, one FrameIndex record (tick, offset and server time of every frame) and a fixed 16-byte footer:
// the index record's file offset (u64 LE), the frame count (u32 LE), then kRecordingFooterMagic (u32 LE).
// The writer flushes after every record, so a crash loses at most the record being written; a file without
// a valid footer (cut short) is read by scanning its records, up to the first incomplete or invalid one.
//
// Bodies are stored as floats, exactly as the client dequantized them, not as quantization codes: a replay
// then shows bit for bit what the live client showed, and a reader (the viewer) needs neither the codec nor
// the session's quantization. The price is size: 50 bytes a body against about 16 for the codes.
//
// The reader treats the file as untrusted: every record is bounds-checked against the file and verified with
// flatbuffers::Verifier, frames are checked (shape kinds, finite numbers, ids strictly increasing,
// generations non-zero), and any failure comes back as false with a message; it never throws or aborts.
#pragma once

#include "polytope/client/client.h"

#include <cstdint>
#include <cstdio>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace polytope::client
{

inline constexpr std::uint32_t kRecordingMagic = 0x52544c50u;       ///< "PLTR" read as little-endian u32
inline constexpr std::uint32_t kRecordingFooterMagic = 0x58444950u; ///< "PIDX" read as little-endian u32
inline constexpr std::uint16_t kRecordingVersion = 1;
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

class RecordingWriter
{
  public:
    RecordingWriter() = default;
    ~RecordingWriter(); ///< closes (index and footer) when still open
    RecordingWriter(const RecordingWriter&) = delete;
    RecordingWriter& operator=(const RecordingWriter&) = delete;

    /// Creates (truncates) the file and writes the header. False with a message on failure.
    bool open(const std::string& path, const RecordingHeader& header, std::string& error);
    /// Appends one snapshot (its `bodies`; `quantized` is not stored) and flushes.
    bool write(const ReceivedSnapshot& snapshot, std::string& error);
    /// Writes the index and the footer and closes the file.
    bool close(std::string& error);

    bool isOpen() const { return m_file != nullptr; }
    std::uint64_t framesWritten() const { return m_index.size(); }
    std::uint64_t bytesWritten() const { return m_offset; }

  private:
    bool writeRecord(std::span<const std::uint8_t> sizePrefixed, std::string& error);

    std::FILE* m_file = nullptr;
    std::uint64_t m_offset = 0;
    std::vector<RecordingFrameInfo> m_index;
};

class RecordingReader
{
  public:
    RecordingReader() = default;
    ~RecordingReader();
    RecordingReader(const RecordingReader&) = delete;
    RecordingReader& operator=(const RecordingReader&) = delete;

    /// Opens a file: checks the header, then reads the index through the footer, or rebuilds it by scanning
    /// when there is no valid footer. False with a message when the file is not a readable recording.
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
    bool readFooterIndex(std::string& error);
    void scan(std::uint64_t from);
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
};

/// Reads every frame once. `progress` (may be empty) is called with (frames done, frames) now and then.
RecordingSummary summarizeRecording(RecordingReader& reader,
                                    const std::function<void(std::size_t, std::size_t)>& progress = {});

} // namespace polytope::client
