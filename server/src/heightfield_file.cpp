// Heightfield files (geometry_files.h): 16-bit grayscale PNG through stb_image (Debian's libstb, which has
// the implementation compiled in) or raw little-endian 16-bit samples, into physics::HeightFieldDesc's
// layout, then physics::buildHeightField. A PNG's header is read (stbi_info) and its size checked before
// anything is decoded, so a small file that claims a huge image costs nothing.
#include "polytope/server/geometry_files.h"
#include "polytope/server/regular_file.h"

#include <stb_image.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <string>

namespace polytope::server
{
namespace
{

constexpr unsigned char kPngSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};

HeightFieldFileResult heightFieldFailure(const std::string& name, GeometryFileError error,
                                         const std::string& message)
{
    HeightFieldFileResult result;
    result.error = error;
    result.message = printableExcerpt(name, 256) + ": " + message;
    return result;
}

std::string sideRange()
{
    return std::to_string(physics::kMinHeightFieldSamplesPerSide) + " to " +
           std::to_string(physics::kMaxHeightFieldSamplesPerSide);
}

bool sideInRange(long long side)
{
    return side >= physics::kMinHeightFieldSamplesPerSide && side <= physics::kMaxHeightFieldSamplesPerSide;
}

std::string stbReason()
{
    const char* reason = stbi_failure_reason();
    return reason != nullptr ? printableExcerpt(reason, 100) : std::string("unknown reason");
}

/// Decodes a PNG's one gray channel through `load` (stbi_load_16_from_memory or stbi_load_from_memory) into
/// result.samples, which stays empty when the image decodes to another size than width x height. Returns
/// false with `result` set to the failure when stb_image cannot decode it.
template <class Load>
bool decodeGray(Load load, const stbi_uc* data, int length, int width, int height, const std::string& name,
                HeightFieldFileResult& result)
{
    int decodedWidth = 0, decodedHeight = 0, decodedChannels = 0;
    auto* pixels = load(data, length, &decodedWidth, &decodedHeight, &decodedChannels, 1);
    if (pixels == nullptr)
    {
        result =
            heightFieldFailure(name, GeometryFileError::Malformed, "unreadable PNG (" + stbReason() + ")");
        return false;
    }
    if (decodedWidth == width && decodedHeight == height)
    {
        const std::size_t count = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
        result.samples.assign(pixels, pixels + count);
    }
    stbi_image_free(pixels);
    return true;
}

/// Reads a PNG into `result`'s samples and counts; returns false with `result` set to the failure.
bool readPng(std::string_view bytes, const std::string& name, const HeightFieldFileOptions& options,
             HeightFieldFileResult& result)
{
    if (bytes.size() < sizeof kPngSignature ||
        std::memcmp(bytes.data(), kPngSignature, sizeof kPngSignature) != 0)
    {
        result =
            heightFieldFailure(name, GeometryFileError::UnknownFormat, "not a PNG file (no PNG signature)");
        return false;
    }
    if (bytes.size() > static_cast<std::size_t>(INT_MAX))
    {
        result = heightFieldFailure(name, GeometryFileError::TooLarge, "larger than stb_image reads (2 GiB)");
        return false;
    }
    const auto* data = reinterpret_cast<const stbi_uc*>(bytes.data());
    const int length = static_cast<int>(bytes.size());
    int width = 0, height = 0, channels = 0;
    if (stbi_info_from_memory(data, length, &width, &height, &channels) == 0)
    {
        result =
            heightFieldFailure(name, GeometryFileError::Malformed, "unreadable PNG (" + stbReason() + ")");
        return false;
    }
    if (channels == 3 || channels == 4)
    {
        result = heightFieldFailure(name, GeometryFileError::Unsupported,
                                    std::string("a colour PNG (") + (channels == 3 ? "RGB" : "RGBA") +
                                        "): save the heightmap as 16-bit grayscale");
        return false;
    }
    if (channels != 1)
    {
        result = heightFieldFailure(name, GeometryFileError::Unsupported,
                                    "grayscale with an alpha channel: save the heightmap as 16-bit grayscale "
                                    "without alpha");
        return false;
    }
    if (!sideInRange(width) || !sideInRange(height))
    {
        result = heightFieldFailure(name, GeometryFileError::InvalidGeometry,
                                    "an image of " + std::to_string(width) + " x " + std::to_string(height) +
                                        " samples (each side must have " + sideRange() + ")");
        return false;
    }
    const bool sixteenBit = stbi_is_16_bit_from_memory(data, length) != 0;
    if (!sixteenBit && !options.allowEightBitPng)
    {
        result = heightFieldFailure(name, GeometryFileError::Unsupported,
                                    "8-bit samples (allowEightBitPng is off): save the heightmap as 16-bit "
                                    "grayscale");
        return false;
    }
    const std::size_t count = static_cast<std::size_t>(width) * static_cast<std::size_t>(height);
    const bool decoded = sixteenBit
                             ? decodeGray(stbi_load_16_from_memory, data, length, width, height, name, result)
                             : decodeGray(stbi_load_from_memory, data, length, width, height, name, result);
    if (!decoded)
    {
        return false;
    }
    if (result.samples.size() != count)
    {
        result = heightFieldFailure(name, GeometryFileError::Malformed,
                                    "the PNG decoded to another size than its header says");
        return false;
    }
    result.sampleCountX = static_cast<std::uint32_t>(width);
    result.sampleCountZ = static_cast<std::uint32_t>(height);
    return true;
}

bool readRaw(std::string_view bytes, const std::string& name, const HeightFieldFileOptions& options,
             HeightFieldFileResult& result)
{
    if (!sideInRange(options.rawSamplesX) || !sideInRange(options.rawSamplesZ))
    {
        result = heightFieldFailure(name, GeometryFileError::InvalidGeometry,
                                    "raw samples " + std::to_string(options.rawSamplesX) + " x " +
                                        std::to_string(options.rawSamplesZ) + " (each side must have " +
                                        sideRange() + "; set rawSamplesX and rawSamplesZ)");
        return false;
    }
    const std::size_t count = std::size_t(options.rawSamplesX) * options.rawSamplesZ;
    if (bytes.size() != 2 * count)
    {
        result = heightFieldFailure(name, GeometryFileError::InvalidGeometry,
                                    "a raw file of " + std::to_string(bytes.size()) + " bytes, but " +
                                        std::to_string(options.rawSamplesX) + " x " +
                                        std::to_string(options.rawSamplesZ) + " samples of 2 bytes take " +
                                        std::to_string(2 * count));
        return false;
    }
    result.samples.resize(count);
    const auto* data = reinterpret_cast<const unsigned char*>(bytes.data());
    for (std::size_t i = 0; i < count; ++i)
    {
        result.samples[i] = static_cast<std::uint16_t>(data[2 * i] | (data[2 * i + 1] << 8));
    }
    result.sampleCountX = options.rawSamplesX;
    result.sampleCountZ = options.rawSamplesZ;
    return true;
}

/// Marks every cell with a corner equal to `hole` and stores such samples as the lowest other sample.
void markHoles(std::uint16_t hole, HeightFieldFileResult& result)
{
    const std::uint32_t nx = result.sampleCountX;
    const std::uint32_t cellsX = nx - 1;
    const std::uint32_t cellsZ = result.sampleCountZ - 1;
    std::vector<std::uint8_t> mask((std::size_t(cellsX) * cellsZ + 7) / 8, 0);
    std::uint32_t holes = 0;
    for (std::uint32_t cz = 0; cz < cellsZ; ++cz)
    {
        for (std::uint32_t cx = 0; cx < cellsX; ++cx)
        {
            const std::size_t s = std::size_t(cz) * nx + cx;
            const std::vector<std::uint16_t>& v = result.samples;
            if (v[s] == hole || v[s + 1] == hole || v[s + nx] == hole || v[s + nx + 1] == hole)
            {
                const std::size_t cell = std::size_t(cz) * cellsX + cx;
                mask[cell >> 3] = static_cast<std::uint8_t>(mask[cell >> 3] | (1u << (cell & 7u)));
                ++holes;
            }
        }
    }
    if (holes == 0)
    {
        return;
    }
    std::uint16_t lowest = 0xffff;
    bool anyOther = false;
    for (const std::uint16_t s : result.samples)
    {
        if (s != hole)
        {
            lowest = std::min(lowest, s);
            anyOther = true;
        }
    }
    if (anyOther)
    {
        std::replace(result.samples.begin(), result.samples.end(), hole, lowest);
    }
    result.holeMask = std::move(mask);
    result.holeCellCount = holes;
}

HeightFieldFileResult load(std::string_view bytes, const std::string& name,
                           const HeightFieldFileOptions& options)
{
    HeightFieldFileFormat format = options.format;
    if (format == HeightFieldFileFormat::Auto)
    {
        std::string extension = std::filesystem::path(name).extension().string();
        std::transform(extension.begin(), extension.end(), extension.begin(),
                       [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
        if (extension == ".png")
        {
            format = HeightFieldFileFormat::Png;
        }
        else if (extension == ".raw" || extension == ".r16")
        {
            format = HeightFieldFileFormat::Raw16;
        }
        else
        {
            return heightFieldFailure(name, GeometryFileError::UnknownFormat,
                                      "unknown extension '" + printableExcerpt(extension) +
                                          "' (a heightfield file is .png, .raw or .r16)");
        }
    }
    if (bytes.size() > options.maxFileBytes)
    {
        return heightFieldFailure(name, GeometryFileError::TooLarge,
                                  "larger than " + std::to_string(options.maxFileBytes) + " bytes (" +
                                      std::to_string(bytes.size()) + ")");
    }
    HeightFieldFileResult result;
    const bool read = format == HeightFieldFileFormat::Png ? readPng(bytes, name, options, result)
                                                           : readRaw(bytes, name, options, result);
    if (!read)
    {
        return result;
    }
    result.cellSizeX = options.cellSizeXMeters;
    result.cellSizeZ = options.cellSizeZMeters;
    result.heightScale = options.heightScale;
    result.heightOffset = options.heightOffset;
    if (options.holeSample.has_value())
    {
        markHoles(*options.holeSample, result);
    }
    physics::HeightFieldBuildResult built = physics::buildHeightField(result.desc());
    if (!built.ok())
    {
        return heightFieldFailure(name, GeometryFileError::BuildFailed,
                                  std::string("the heightfield builder refused it: ") +
                                      physics::toString(built.error) + " (" + built.message + ")");
    }
    result.heightField = std::move(built.heightField);
    return result;
}

} // namespace

physics::HeightFieldDesc HeightFieldFileResult::desc() const
{
    physics::HeightFieldDesc d;
    d.sampleCountX = sampleCountX;
    d.sampleCountZ = sampleCountZ;
    d.cellSizeX = cellSizeX;
    d.cellSizeZ = cellSizeZ;
    d.samples = samples;
    d.heightScale = heightScale;
    d.heightOffset = heightOffset;
    d.holeMask = holeMask;
    return d;
}

HeightFieldFileResult loadHeightFieldBytes(std::string_view bytes, const std::string& name,
                                           const HeightFieldFileOptions& options)
{
    try
    {
        return load(bytes, name, options);
    }
    catch (const std::bad_alloc&)
    {
        return heightFieldFailure(name, GeometryFileError::TooLarge, "out of memory while reading");
    }
    catch (const std::exception& e)
    {
        return heightFieldFailure(name, GeometryFileError::Malformed,
                                  std::string("refused (") + printableExcerpt(e.what(), 200) + ")");
    }
}

HeightFieldFileResult loadHeightFieldFile(const std::string& path, const HeightFieldFileOptions& options)
{
    try
    {
        if (path.empty())
        {
            return heightFieldFailure(path, GeometryFileError::BadPath, "empty path");
        }
        std::string bytes;
        std::string error;
        const FileStatus status =
            readRegularFile(path, {options.maxFileBytes, options.followSymlinks}, bytes, error);
        if (status != FileStatus::Ok)
        {
            return heightFieldFailure(path,
                                      status == FileStatus::TooLarge ? GeometryFileError::TooLarge
                                                                     : GeometryFileError::CannotRead,
                                      error);
        }
        return load(bytes, path, options);
    }
    catch (const std::bad_alloc&)
    {
        return heightFieldFailure(path, GeometryFileError::TooLarge, "out of memory while reading");
    }
    catch (const std::exception& e)
    {
        return heightFieldFailure(path, GeometryFileError::Malformed,
                                  std::string("refused (") + printableExcerpt(e.what(), 200) + ")");
    }
}

} // namespace polytope::server
