#include "polytope/client/recording.h"

#include "polytope/recording/recording_generated.h"

#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <ctime>
#include <set>

namespace polytope::client
{
namespace rec = polytope::recording;

namespace
{

void putU32(std::uint8_t* out, std::uint32_t v)
{
    for (int i = 0; i < 4; ++i)
    {
        out[i] = static_cast<std::uint8_t>(v >> (8 * i));
    }
}

void putU64(std::uint8_t* out, std::uint64_t v)
{
    for (int i = 0; i < 8; ++i)
    {
        out[i] = static_cast<std::uint8_t>(v >> (8 * i));
    }
}

std::uint32_t getU32(const std::uint8_t* in)
{
    std::uint32_t v = 0;
    for (int i = 3; i >= 0; --i)
    {
        v = (v << 8) | in[i];
    }
    return v;
}

std::uint64_t getU64(const std::uint8_t* in)
{
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
    {
        v = (v << 8) | in[i];
    }
    return v;
}

std::string systemError(const char* what)
{
    return std::string(what) + ": " + std::strerror(errno);
}

std::string hexHash(std::uint64_t hash)
{
    char text[24];
    std::snprintf(text, sizeof text, "%016" PRIx64, hash);
    return text;
}

bool finite3(const std::array<float, 3>& v)
{
    return std::isfinite(v[0]) && std::isfinite(v[1]) && std::isfinite(v[2]);
}

/// Verifies a size-prefixed record and returns its root, or nullptr.
const rec::Record* verifiedRecord(const std::vector<std::uint8_t>& bytes)
{
    flatbuffers::Verifier verifier(bytes.data(), bytes.size());
    if (!rec::VerifySizePrefixedRecordBuffer(verifier))
    {
        return nullptr;
    }
    return rec::GetSizePrefixedRecord(bytes.data());
}

} // namespace

RecordingHeader RecordingHeader::fromClient(const Client& client, const std::string& server)
{
    RecordingHeader h;
    const protocol::SessionParameters& s = client.session();
    h.scene = s.scene;
    h.server = server;
    h.tickRateHz = s.tickRateHz;
    h.snapshotRateHz = s.snapshotRateHz;
    h.quantization = s.position;
    h.clientId = s.clientId;
    h.firstTick = s.firstTick;
    h.createdUnixSeconds = static_cast<double>(std::time(nullptr));
    return h;
}

// --- writer ----------------------------------------------------------------------------------------------

RecordingWriter::~RecordingWriter()
{
    std::string ignored;
    close(ignored);
}

bool RecordingWriter::writeRecord(std::span<const std::uint8_t> sizePrefixed, std::string& error)
{
    if (std::fwrite(sizePrefixed.data(), 1, sizePrefixed.size(), m_file) != sizePrefixed.size() ||
        std::fflush(m_file) != 0)
    {
        error = systemError("cannot write the recording");
        return false;
    }
    m_offset += sizePrefixed.size();
    return true;
}

bool RecordingWriter::open(const std::string& path, const RecordingHeader& header, std::string& error)
{
    if (m_file != nullptr)
    {
        error = "recording already open";
        return false;
    }
    m_file = std::fopen(path.c_str(), "wb");
    if (m_file == nullptr)
    {
        error = systemError(("cannot create " + path).c_str());
        return false;
    }
    m_offset = 0;
    m_index.clear();
    m_geometryIndex.clear();
    m_geometryOffsets.clear();
    flatbuffers::FlatBufferBuilder fbb(1024);
    const auto scene = fbb.CreateString(header.scene);
    const auto server = fbb.CreateString(header.server);
    const auto& q = header.quantization;
    const rec::Vec3f boundsMin(q.boundsMin[0], q.boundsMin[1], q.boundsMin[2]);
    const rec::Vec3f boundsMax(q.boundsMax[0], q.boundsMax[1], q.boundsMax[2]);
    rec::HeaderBuilder hb(fbb);
    hb.add_magic(kRecordingMagic);
    hb.add_version(kRecordingVersion);
    hb.add_scene(scene);
    hb.add_server(server);
    hb.add_tick_rate_hz(static_cast<std::uint16_t>(std::clamp(header.tickRateHz, 0, 65535)));
    hb.add_snapshot_rate_hz(static_cast<std::uint16_t>(std::clamp(header.snapshotRateHz, 0, 65535)));
    hb.add_bounds_min(&boundsMin);
    hb.add_bounds_max(&boundsMax);
    hb.add_steps_per_metre(q.stepsPerMetre);
    hb.add_client_id(header.clientId);
    hb.add_first_tick(header.firstTick);
    hb.add_created_unix_seconds(header.createdUnixSeconds);
    const auto h = hb.Finish();
    rec::FinishSizePrefixedRecordBuffer(fbb, rec::CreateRecord(fbb, rec::Payload::Header, h.Union()));
    if (!writeRecord({fbb.GetBufferPointer(), fbb.GetSize()}, error))
    {
        std::fclose(m_file);
        m_file = nullptr;
        return false;
    }
    return true;
}

bool RecordingWriter::write(const ReceivedSnapshot& snapshot, std::string& error)
{
    if (m_file == nullptr)
    {
        error = "recording not open";
        return false;
    }
    flatbuffers::FlatBufferBuilder fbb(256 + snapshot.bodies.size() * sizeof(rec::RecordedBody));
    std::vector<rec::RecordedBody> bodies;
    bodies.reserve(snapshot.bodies.size());
    for (const SnapshotBody& b : snapshot.bodies)
    {
        bodies.emplace_back(
            b.id, b.generation, rec::Vec3f(b.position[0], b.position[1], b.position[2]),
            rec::Quatf(b.orientation[0], b.orientation[1], b.orientation[2], b.orientation[3]),
            rec::Vec3f(b.extent[0], b.extent[1], b.extent[2]), static_cast<std::uint8_t>(b.shape), b.atRest);
    }
    const auto vector = fbb.CreateVectorOfStructs(bodies);
    flatbuffers::Offset<flatbuffers::Vector<std::uint64_t>> geometry;
    if (std::any_of(snapshot.bodies.begin(), snapshot.bodies.end(),
                    [](const SnapshotBody& b) { return b.geometry != 0; }))
    {
        std::vector<std::uint64_t> hashes;
        hashes.reserve(snapshot.bodies.size());
        for (const SnapshotBody& b : snapshot.bodies)
        {
            hashes.push_back(b.geometry);
        }
        geometry = fbb.CreateVector(hashes);
    }
    const auto frame = rec::CreateFrame(
        fbb, snapshot.tick, snapshot.serverTime, snapshot.receiveTime,
        static_cast<std::uint32_t>(std::min<std::size_t>(snapshot.bytes, UINT32_MAX)), vector, geometry);
    rec::FinishSizePrefixedRecordBuffer(fbb, rec::CreateRecord(fbb, rec::Payload::Frame, frame.Union()));
    const std::uint64_t offset = m_offset;
    if (!writeRecord({fbb.GetBufferPointer(), fbb.GetSize()}, error))
    {
        return false;
    }
    m_index.push_back({snapshot.tick, offset, snapshot.serverTime});
    return true;
}

bool RecordingWriter::writeGeometry(const protocol::GeometryAssembler& geometry, std::string& error)
{
    for (const auto& [hash, received] : geometry.complete())
    {
        if (!m_geometryOffsets.contains(hash) && !writeGeometry(received, error))
        {
            return false;
        }
    }
    return true;
}

bool RecordingWriter::writeGeometry(const protocol::ReceivedGeometry& geometry, std::string& error)
{
    if (m_file == nullptr)
    {
        error = "recording not open";
        return false;
    }
    if (m_geometryOffsets.contains(geometry.hash))
    {
        return true;
    }
    flatbuffers::FlatBufferBuilder fbb(64 + geometry.bytes.size());
    const auto bytes = fbb.CreateVector(geometry.bytes);
    const auto recorded =
        rec::CreateRecordedGeometry(fbb, geometry.hash, static_cast<std::uint8_t>(geometry.kind), bytes);
    rec::FinishSizePrefixedRecordBuffer(
        fbb, rec::CreateRecord(fbb, rec::Payload::RecordedGeometry, recorded.Union()));
    const std::uint64_t offset = m_offset;
    if (!writeRecord({fbb.GetBufferPointer(), fbb.GetSize()}, error))
    {
        return false;
    }
    m_geometryOffsets.emplace(geometry.hash, offset);
    m_geometryIndex.push_back({geometry.hash, offset});
    return true;
}

bool RecordingWriter::close(std::string& error)
{
    if (m_file == nullptr)
    {
        return true;
    }
    flatbuffers::FlatBufferBuilder fbb(64 + m_index.size() * sizeof(rec::IndexEntry));
    std::vector<rec::IndexEntry> entries;
    entries.reserve(m_index.size());
    for (const RecordingFrameInfo& f : m_index)
    {
        entries.emplace_back(f.tick, f.offset, f.serverTime);
    }
    std::vector<rec::GeometryIndexEntry> geometry;
    geometry.reserve(m_geometryIndex.size());
    for (const RecordingGeometryInfo& g : m_geometryIndex)
    {
        geometry.emplace_back(g.hash, g.offset);
    }
    const auto frames = fbb.CreateVectorOfStructs(entries);
    const auto index = rec::CreateFrameIndex(fbb, frames, fbb.CreateVectorOfStructs(geometry));
    rec::FinishSizePrefixedRecordBuffer(fbb, rec::CreateRecord(fbb, rec::Payload::FrameIndex, index.Union()));
    const std::uint64_t indexOffset = m_offset;
    bool ok = writeRecord({fbb.GetBufferPointer(), fbb.GetSize()}, error);
    if (ok)
    {
        std::uint8_t footer[kRecordingFooterBytes];
        putU64(footer, indexOffset);
        putU32(footer + 8, static_cast<std::uint32_t>(std::min<std::size_t>(m_index.size(), UINT32_MAX)));
        putU32(footer + 12, kRecordingFooterMagic);
        ok = writeRecord({footer, sizeof footer}, error);
    }
    if (std::fclose(m_file) != 0 && ok)
    {
        error = systemError("cannot close the recording");
        ok = false;
    }
    m_file = nullptr;
    return ok;
}

// --- reader ----------------------------------------------------------------------------------------------

RecordingReader::~RecordingReader()
{
    closeFile();
}

void RecordingReader::closeFile()
{
    if (m_file != nullptr)
    {
        std::fclose(m_file);
        m_file = nullptr;
    }
    m_memory.clear();
}

bool RecordingReader::open(const std::string& path, std::string& error)
{
    closeFile();
    m_file = std::fopen(path.c_str(), "rb");
    if (m_file == nullptr)
    {
        error = systemError(("cannot open " + path).c_str());
        return false;
    }
    if (std::fseek(m_file, 0, SEEK_END) != 0)
    {
        error = systemError(("cannot seek in " + path).c_str());
        closeFile();
        return false;
    }
    const long size = std::ftell(m_file);
    if (size < 0)
    {
        error = systemError(("cannot seek in " + path).c_str());
        closeFile();
        return false;
    }
    m_fileBytes = static_cast<std::uint64_t>(size);
    return start(error);
}

bool RecordingReader::openMemory(std::span<const std::uint8_t> bytes, std::string& error)
{
    closeFile();
    m_memory.assign(bytes.begin(), bytes.end());
    m_fileBytes = m_memory.size();
    return start(error);
}

bool RecordingReader::readRecord(std::uint64_t offset, std::uint64_t limit, std::uint64_t& next,
                                 std::string& error)
{
    const auto readAt = [&](std::uint64_t at, std::size_t count, std::uint8_t* out)
    {
        if (m_file == nullptr)
        {
            if (at > m_memory.size() || count > m_memory.size() - at)
            {
                return false;
            }
            std::memcpy(out, m_memory.data() + at, count);
            return true;
        }
        return std::fseek(m_file, static_cast<long>(at), SEEK_SET) == 0 &&
               std::fread(out, 1, count, m_file) == count;
    };
    limit = std::min(limit, m_fileBytes);
    if (offset > limit || limit - offset < 4)
    {
        error = "record at offset " + std::to_string(offset) + " is cut short (no length)";
        return false;
    }
    std::uint8_t prefix[4];
    if (!readAt(offset, 4, prefix))
    {
        error = "cannot read at offset " + std::to_string(offset);
        return false;
    }
    const std::uint32_t size = getU32(prefix);
    if (size < 8 || size > kMaxRecordBytes)
    {
        error =
            "record at offset " + std::to_string(offset) + " has an invalid length " + std::to_string(size);
        return false;
    }
    if (limit - offset - 4 < size)
    {
        error = "record at offset " + std::to_string(offset) + " is cut short (" +
                std::to_string(limit - offset - 4) + " of " + std::to_string(size) + " bytes)";
        return false;
    }
    m_record.resize(std::size_t{size} + 4);
    if (!readAt(offset, m_record.size(), m_record.data()))
    {
        error = "cannot read the record at offset " + std::to_string(offset);
        return false;
    }
    next = offset + 4 + size;
    return true;
}

bool RecordingReader::start(std::string& error)
{
    m_index.clear();
    m_indexRebuilt = false;
    m_warning.clear();
    m_header = {};
    m_version = 0;
    m_geometry.clear();
    m_geometryIndex.clear();
    m_geometryBytes = 0;
    std::uint64_t next = 0;
    if (m_fileBytes == 0)
    {
        error = "not a recording: the file is empty";
        return false;
    }
    if (!readRecord(0, m_fileBytes, next, error))
    {
        error = "not a recording: " + error;
        return false;
    }
    const rec::Record* record = verifiedRecord(m_record);
    const rec::Header* h = record != nullptr ? record->payload_as_Header() : nullptr;
    if (h == nullptr || h->magic() != kRecordingMagic)
    {
        error = "not a recording: the first record is not a valid header";
        return false;
    }
    if (h->version() < kOldestRecordingVersion || h->version() > kRecordingVersion)
    {
        error = "unsupported recording version " + std::to_string(h->version()) + " (this reader reads " +
                std::to_string(kOldestRecordingVersion) + " to " + std::to_string(kRecordingVersion) + ")";
        return false;
    }
    m_version = h->version();
    if (h->tick_rate_hz() == 0 || h->snapshot_rate_hz() == 0)
    {
        error = "corrupt header: zero tick or snapshot rate";
        return false;
    }
    m_header.scene = h->scene() != nullptr ? h->scene()->str() : std::string();
    m_header.server = h->server() != nullptr ? h->server()->str() : std::string();
    m_header.tickRateHz = h->tick_rate_hz();
    m_header.snapshotRateHz = h->snapshot_rate_hz();
    if (h->bounds_min() != nullptr && h->bounds_max() != nullptr)
    {
        m_header.quantization.boundsMin = {h->bounds_min()->x(), h->bounds_min()->y(), h->bounds_min()->z()};
        m_header.quantization.boundsMax = {h->bounds_max()->x(), h->bounds_max()->y(), h->bounds_max()->z()};
    }
    m_header.quantization.stepsPerMetre = h->steps_per_metre();
    m_header.clientId = h->client_id();
    m_header.firstTick = h->first_tick();
    m_header.createdUnixSeconds = h->created_unix_seconds();
    m_firstFrameOffset = next;

    std::string why;
    bool fatal = false;
    if (!readFooterIndex(why, fatal))
    {
        if (fatal)
        {
            error = why;
            return false;
        }
        m_indexRebuilt = true;
        m_index.clear();
        m_geometry.clear();
        m_geometryIndex.clear();
        m_geometryBytes = 0;
        if (!scan(m_firstFrameOffset, error))
        {
            return false;
        }
        if (!why.empty())
        {
            m_warning = m_warning.empty() ? why : why + "; " + m_warning;
        }
    }
    return true;
}

bool RecordingReader::addGeometry(const rec::RecordedGeometry& recorded, std::uint64_t offset,
                                  std::string& error)
{
    const std::uint64_t hash = recorded.hash();
    const std::string where =
        "geometry record at offset " + std::to_string(offset) + " (hash " + hexHash(hash) + ", " +
        protocol::shapeKindName(static_cast<protocol::wire::ShapeKind>(recorded.kind())) + ")";
    const std::size_t size = recorded.bytes() != nullptr ? recorded.bytes()->size() : 0;
    if (hash == 0 || size == 0 || size > protocol::kMaxGeometryBytes)
    {
        error = where + " is corrupt: hash 0 or size " + std::to_string(size) + " out of range";
        return false;
    }
    const auto kind = static_cast<protocol::wire::ShapeKind>(recorded.kind());
    if (recorded.kind() > static_cast<std::uint8_t>(protocol::wire::ShapeKind::MAX) ||
        !protocol::isGeometryKind(kind))
    {
        error = where + " is corrupt: kind " + std::to_string(recorded.kind()) + " has no geometry";
        return false;
    }
    if (const auto earlier = m_geometry.find(hash); earlier != m_geometry.end())
    {
        error = where + " is corrupt: the file holds this geometry already";
        return false;
    }
    if (size > m_geometryCapBytes - std::min(m_geometryBytes, m_geometryCapBytes))
    {
        error = where + " takes the recording's geometry past the cap of " +
                std::to_string(m_geometryCapBytes) + " bytes";
        return false;
    }
    const std::span<const std::uint8_t> bytes(recorded.bytes()->data(), size);
    const std::uint64_t actual = protocol::geometryHash(bytes);
    if (actual != hash)
    {
        error = where + " is corrupt: its bytes hash to " + hexHash(actual);
        return false;
    }
    protocol::ReceivedGeometry geometry;
    const protocol::GeometryError decoded = protocol::decodeGeometry(bytes, geometry.geometry);
    if (decoded != protocol::GeometryError::None || geometry.geometry.kind != kind)
    {
        error = where + " is corrupt: it does not decode as a " + protocol::shapeKindName(kind) + " (" +
                protocol::geometryErrorName(
                    decoded == protocol::GeometryError::None ? protocol::GeometryError::BadKind : decoded) +
                ")";
        return false;
    }
    geometry.hash = hash;
    geometry.kind = kind;
    geometry.bytes.assign(bytes.begin(), bytes.end());
    m_geometryBytes += size;
    m_geometry.emplace(hash, std::move(geometry));
    m_geometryIndex.push_back({hash, offset});
    return true;
}

bool RecordingReader::readFooterIndex(std::string& error, bool& fatal)
{
    if (m_fileBytes < m_firstFrameOffset + kRecordingFooterBytes)
    {
        error = "no footer (recording not closed)";
        return false;
    }
    const std::uint64_t footerAt = m_fileBytes - kRecordingFooterBytes;
    std::uint8_t footer[kRecordingFooterBytes];
    if (m_file == nullptr)
    {
        std::memcpy(footer, m_memory.data() + footerAt, sizeof footer);
    }
    else if (std::fseek(m_file, static_cast<long>(footerAt), SEEK_SET) != 0 ||
             std::fread(footer, 1, sizeof footer, m_file) != sizeof footer)
    {
        error = "cannot read the footer";
        return false;
    }
    if (getU32(footer + 12) != kRecordingFooterMagic)
    {
        error = "no footer (recording not closed)";
        return false;
    }
    const std::uint64_t indexOffset = getU64(footer);
    const std::uint32_t count = getU32(footer + 8);
    std::uint64_t next = 0;
    std::string recordError;
    if (indexOffset < m_firstFrameOffset || !readRecord(indexOffset, footerAt, next, recordError) ||
        next != footerAt)
    {
        error = "the footer points at no index" +
                (recordError.empty() ? std::string() : " (" + recordError + ")");
        return false;
    }
    const rec::Record* record = verifiedRecord(m_record);
    const rec::FrameIndex* index = record != nullptr ? record->payload_as_FrameIndex() : nullptr;
    if (index == nullptr || index->frames() == nullptr || index->frames()->size() != count)
    {
        error = "the index record is corrupt";
        return false;
    }
    std::vector<RecordingFrameInfo> frames;
    frames.reserve(count);
    std::uint64_t previous = 0;
    for (const rec::IndexEntry* e : *index->frames())
    {
        const bool ordered = frames.empty() ? e->offset() >= m_firstFrameOffset : e->offset() > previous;
        if (!ordered || e->offset() >= indexOffset || !std::isfinite(e->server_time()))
        {
            error = "the index record is corrupt (entry " + std::to_string(frames.size()) + ")";
            return false;
        }
        previous = e->offset();
        frames.push_back({e->tick(), e->offset(), e->server_time()});
    }
    // Geometry last: what the index names of it must be there and whole. A wrong entry makes the index
    // unusable (the file is scanned instead); a geometry record that is there but fails its checks is fatal.
    // The entries are copied first: reading a geometry record replaces m_record, which holds the index.
    std::vector<RecordingGeometryInfo> entries;
    if (index->geometry() != nullptr)
    {
        entries.reserve(index->geometry()->size());
        for (const rec::GeometryIndexEntry* e : *index->geometry())
        {
            entries.push_back({e->hash(), e->offset()});
        }
    }
    std::uint64_t previousGeometry = 0;
    for (const RecordingGeometryInfo& entry : entries)
    {
        std::string geometryError;
        const rec::Record* geometryRecord = nullptr;
        const bool ordered =
            m_geometryIndex.empty() ? entry.offset >= m_firstFrameOffset : entry.offset > previousGeometry;
        if (ordered && entry.offset < indexOffset &&
            readRecord(entry.offset, indexOffset, next, geometryError))
        {
            geometryRecord = verifiedRecord(m_record);
        }
        const rec::RecordedGeometry* recorded =
            geometryRecord != nullptr ? geometryRecord->payload_as_RecordedGeometry() : nullptr;
        if (recorded == nullptr || recorded->hash() != entry.hash)
        {
            error = "the index names no geometry at offset " + std::to_string(entry.offset) +
                    (geometryError.empty() ? std::string() : " (" + geometryError + ")");
            return false;
        }
        if (!addGeometry(*recorded, entry.offset, error))
        {
            fatal = true;
            return false;
        }
        previousGeometry = entry.offset;
    }
    m_index = std::move(frames);
    return true;
}

bool RecordingReader::scan(std::uint64_t from, std::string& fatalError)
{
    std::uint64_t offset = from;
    while (offset < m_fileBytes)
    {
        std::uint64_t next = 0;
        std::string error;
        if (!readRecord(offset, m_fileBytes, next, error))
        {
            m_warning = "read " + std::to_string(m_index.size()) + " frames; stopped: " + error;
            return true;
        }
        const rec::Record* record = verifiedRecord(m_record);
        if (record == nullptr)
        {
            m_warning = "read " + std::to_string(m_index.size()) + " frames; stopped: record at offset " +
                        std::to_string(offset) + " is corrupt";
            return true;
        }
        if (record->payload_type() == rec::Payload::FrameIndex)
        {
            return true; // the end of the frames
        }
        if (const rec::RecordedGeometry* recorded = record->payload_as_RecordedGeometry())
        {
            if (!addGeometry(*recorded, offset, fatalError))
            {
                return false;
            }
            offset = next;
            continue;
        }
        const rec::Frame* frame = record->payload_as_Frame();
        if (frame == nullptr || !std::isfinite(frame->server_time()))
        {
            m_warning = "read " + std::to_string(m_index.size()) + " frames; stopped: record at offset " +
                        std::to_string(offset) + " is not a frame";
            return true;
        }
        m_index.push_back({frame->tick(), offset, frame->server_time()});
        offset = next;
    }
    return true;
}

bool RecordingReader::readFrame(std::size_t i, ReceivedSnapshot& out, std::string& error)
{
    if (i >= m_index.size())
    {
        error =
            "frame " + std::to_string(i) + " out of range (" + std::to_string(m_index.size()) + " frames)";
        return false;
    }
    const RecordingFrameInfo& info = m_index[i];
    std::uint64_t next = 0;
    if (!readRecord(info.offset, m_fileBytes, next, error))
    {
        error = "frame " + std::to_string(i) + ": " + error;
        return false;
    }
    const rec::Record* record = verifiedRecord(m_record);
    const rec::Frame* frame = record != nullptr ? record->payload_as_Frame() : nullptr;
    if (frame == nullptr)
    {
        error = "frame " + std::to_string(i) + " at offset " + std::to_string(info.offset) + " is corrupt";
        return false;
    }
    if (frame->tick() != info.tick || !std::isfinite(frame->server_time()) ||
        !std::isfinite(frame->receive_time()))
    {
        error = "frame " + std::to_string(i) + " does not match the index or has bad times";
        return false;
    }
    out.tick = frame->tick();
    out.serverTime = frame->server_time();
    out.receiveTime = frame->receive_time();
    out.bytes = frame->bytes();
    out.quantized.clear();
    out.bodies.clear();
    const flatbuffers::Vector<std::uint64_t>* geometry = frame->geometry();
    const std::size_t bodyCount = frame->bodies() != nullptr ? frame->bodies()->size() : 0;
    if (geometry != nullptr && geometry->size() != 0 && geometry->size() != bodyCount)
    {
        error = "frame " + std::to_string(i) + " (tick " + std::to_string(out.tick) + ") names " +
                std::to_string(geometry->size()) + " geometry hashes for " + std::to_string(bodyCount) +
                " bodies";
        return false;
    }
    if (frame->bodies() != nullptr)
    {
        out.bodies.reserve(frame->bodies()->size());
        for (const rec::RecordedBody* b : *frame->bodies())
        {
            SnapshotBody body;
            body.id = b->id();
            body.generation = b->generation();
            body.shape = static_cast<protocol::wire::ShapeKind>(b->shape());
            body.atRest = b->at_rest();
            body.position = {b->position().x(), b->position().y(), b->position().z()};
            body.orientation = {b->orientation().x(), b->orientation().y(), b->orientation().z(),
                                b->orientation().w()};
            body.extent = {b->extent().x(), b->extent().y(), b->extent().z()};
            if (geometry != nullptr && geometry->size() != 0)
            {
                body.geometry = geometry->Get(static_cast<flatbuffers::uoffset_t>(out.bodies.size()));
            }
            const bool ordered = out.bodies.empty() || out.bodies.back().id < body.id;
            const bool finite = finite3(body.position) && finite3(body.extent) &&
                                std::isfinite(body.orientation[0]) && std::isfinite(body.orientation[1]) &&
                                std::isfinite(body.orientation[2]) && std::isfinite(body.orientation[3]);
            if (b->shape() > static_cast<std::uint8_t>(protocol::wire::ShapeKind::MAX) ||
                body.generation == 0 || !ordered || !finite)
            {
                error = "frame " + std::to_string(i) + " (tick " + std::to_string(out.tick) + "): body " +
                        std::to_string(out.bodies.size()) + " is invalid";
                out.bodies.clear();
                return false;
            }
            out.bodies.push_back(body);
        }
    }
    return true;
}

std::size_t RecordingReader::findTick(std::uint64_t tick) const
{
    const auto it = std::find_if(m_index.begin(), m_index.end(),
                                 [&](const RecordingFrameInfo& f) { return f.tick >= tick; });
    return static_cast<std::size_t>(it - m_index.begin());
}

std::size_t RecordingReader::findServerTime(double serverTime) const
{
    std::size_t found = 0;
    for (std::size_t i = 0; i < m_index.size(); ++i)
    {
        if (m_index[i].serverTime <= serverTime)
        {
            found = i;
        }
    }
    return found;
}

RecordingSummary summarizeRecording(RecordingReader& reader,
                                    const std::function<void(std::size_t, std::size_t)>& progress)
{
    RecordingSummary s;
    s.fileBytes = reader.fileBytes();
    const int tickRate = std::max(1, reader.header().tickRateHz);
    const int snapshotRate = std::max(1, reader.header().snapshotRateHz);
    s.expectedTickStep = static_cast<std::uint64_t>(std::max(1, tickRate / snapshotRate));
    ReceivedSnapshot frame;
    std::string error;
    bool haveFirst = false;
    double firstServer = 0.0;
    double firstReceive = 0.0;
    double lastServer = 0.0;
    double lastReceive = 0.0;
    std::uint64_t bodySum = 0;
    // Per geometry hash: the kind its bodies have, and the distinct bodies (id, generation) naming it.
    std::map<std::uint64_t, std::pair<protocol::wire::ShapeKind, std::set<std::uint64_t>>> named;
    const std::size_t count = reader.frameCount();
    for (std::size_t i = 0; i < count; ++i)
    {
        if (progress && i % 256 == 0)
        {
            progress(i, count);
        }
        if (!reader.readFrame(i, frame, error))
        {
            ++s.corruptFrames;
            continue;
        }
        if (!haveFirst)
        {
            haveFirst = true;
            s.firstTick = frame.tick;
            firstServer = frame.serverTime;
            firstReceive = frame.receiveTime;
        }
        else if (frame.tick > s.lastTick + s.expectedTickStep)
        {
            ++s.gaps;
            s.missingSnapshots += (frame.tick - s.lastTick) / s.expectedTickStep - 1;
            s.largestGapSeconds = std::max(s.largestGapSeconds, frame.serverTime - lastServer);
        }
        s.lastTick = frame.tick;
        lastServer = frame.serverTime;
        lastReceive = frame.receiveTime;
        ++s.frames;
        bodySum += frame.bodies.size();
        s.maxBodies = std::max(s.maxBodies, frame.bodies.size());
        s.snapshotBytes += frame.bytes;
        for (const SnapshotBody& b : frame.bodies)
        {
            if (b.geometry != 0)
            {
                auto& [kind, bodies] = named[b.geometry];
                kind = b.shape;
                bodies.insert(std::uint64_t{b.id} << 32 | b.generation);
            }
        }
    }
    for (const auto& [hash, geometry] : reader.geometry())
    {
        named.try_emplace(hash, geometry.kind, std::set<std::uint64_t>{});
    }
    for (const auto& [hash, info] : named)
    {
        const protocol::ReceivedGeometry* stored =
            reader.geometry().contains(hash) ? &reader.geometry().at(hash) : nullptr;
        RecordingSummary::Geometry g;
        g.hash = hash;
        g.kind = stored != nullptr ? stored->kind : info.first;
        g.bytes = stored != nullptr ? stored->bytes.size() : 0;
        g.bodies = info.second.size();
        g.stored = stored != nullptr;
        s.geometry.push_back(g);
    }
    if (progress)
    {
        progress(count, count);
    }
    if (s.frames > 0)
    {
        s.durationSeconds = lastServer - firstServer;
        s.receiveSpanSeconds = lastReceive - firstReceive;
        s.meanBodies = static_cast<double>(bodySum) / static_cast<double>(s.frames);
        if (s.durationSeconds > 0.0)
        {
            s.snapshotsPerSecond = static_cast<double>(s.frames - 1) / s.durationSeconds;
        }
    }
    return s;
}

} // namespace polytope::client
