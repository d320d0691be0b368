// The static heightfield (heightfield.h): building, point and box queries, the ray walk, active edges.
//
// Ray walk. The ray is first clipped to the field's bounds, then walked in three nested levels, each an
// index range visited in the ray's direction: rows of blocks along z; in each, the blocks along x that the
// ray's xz projection crosses within the row; in each block that its height range does not rule out, the
// rows of cells and then the cells. Every level narrows the ray's parameter interval [t0, t1] to the
// part inside its span (a slab test), so each cell is visited at most once and in roughly increasing t,
// and a closest-hit cast stops visiting cells once their interval starts beyond the best hit. Spans are
// widened by a margin (kRayMarginCells of a cell plus a relative term for float rounding of the ray's
// coordinates), which makes rays along grid lines, through grid corners and straight down visit the cells
// on both sides: the exact answer always comes from rayTriangle, the walk only has to be conservative.
// Walking rows of cells (rather than stepping cell to cell by the next boundary crossing) makes the walk
// immune to the ties and division by zero of a classic DDA, at the price of the few margin cells.
#include "polytope/physics/heightfield.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace polytope::physics
{

namespace
{

constexpr std::uint32_t kBlock = kHeightFieldBlockCells;
constexpr std::uint16_t kMaxSample = 0xFFFF;
/// The ray walk's margin, in cells (see the file comment).
constexpr float kRayMarginCells = 1.0f / 64.0f;
/// The ray walk's margin relative to the size of the numbers involved: float rounding of o + t d, and of
/// rayTriangle's barycentric coordinates for rays far from the triangle, stays well below it.
constexpr float kRayMarginRelative = 1.0e-5f;

HeightFieldBuildResult failure(HeightFieldError error, std::string message)
{
    HeightFieldBuildResult result;
    result.error = error;
    result.message = std::move(message);
    return result;
}

/// floor(f) clamped to [0, maxIndex]; 0 for NaN.
std::uint32_t clampedIndex(float f, std::uint32_t maxIndex)
{
    if (!(f > 0.0f))
    {
        return 0;
    }
    if (f >= float(maxIndex))
    {
        return maxIndex;
    }
    return static_cast<std::uint32_t>(f);
}

/// Cells [first, last] of a row of `count` cells of size `size` whose closed spans [i size, (i + 1) size]
/// meet [lo, hi], with the edges computed exactly as the vertices are; false when none does.
bool exactCellRange(float lo, float hi, float size, std::uint32_t count, std::uint32_t& first,
                    std::uint32_t& last)
{
    const auto edge = [size](std::uint32_t i) { return float(i) * size; };
    if (!(lo <= hi) || hi < 0.0f || lo > edge(count))
    {
        return false;
    }
    first = clampedIndex(lo / size, count - 1);
    while (first > 0 && edge(first) >= lo)
    {
        --first;
    }
    while (first + 1 < count && edge(first + 1) < lo)
    {
        ++first;
    }
    last = clampedIndex(hi / size, count - 1);
    while (last + 1 < count && edge(last + 1) <= hi)
    {
        ++last;
    }
    while (last > 0 && edge(last) > hi)
    {
        --last;
    }
    return first <= last;
}

Aabb boundsOf(const Triangle& t)
{
    return {minPerElem(minPerElem(t.a, t.b), t.c), maxPerElem(maxPerElem(t.a, t.b), t.c)};
}

/// The ray's parameter interval as the walk narrows it, with the numbers every level needs.
struct RayWalk
{
    Vec3 origin{};
    Vec3 direction{};
    bool parallel[3] = {false, false, false}; ///< moves less than a quarter margin along the axis
    float margin = 0.0f;                      ///< metres

    /// Narrows [t0, t1] to where coordinate `axis` lies in [lo - margin, hi + margin].
    bool clip(int axis, float lo, float hi, float& t0, float& t1) const
    {
        const float o = origin[axis];
        lo -= margin;
        hi += margin;
        if (parallel[axis])
        {
            return o >= lo && o <= hi && t0 <= t1;
        }
        const float inv = 1.0f / direction[axis];
        float ta = (lo - o) * inv;
        float tb = (hi - o) * inv;
        if (ta > tb)
        {
            std::swap(ta, tb);
        }
        t0 = std::max(t0, ta);
        t1 = std::min(t1, tb);
        return t0 <= t1;
    }

    /// Smallest and largest coordinate `axis` over [t0, t1].
    void range(int axis, float t0, float t1, float& lo, float& hi) const
    {
        const float a = origin[axis] + t0 * direction[axis];
        const float b = origin[axis] + t1 * direction[axis];
        lo = std::min(a, b);
        hi = std::max(a, b);
    }

    /// Cells [first, last] (clamped to [lowest, highest]) of size `size` along `axis` that the ray may
    /// cross for t in [t0, t1], widened by the margin; false when the range is empty.
    bool cells(int axis, float t0, float t1, float size, std::uint32_t lowest, std::uint32_t highest,
               std::uint32_t& first, std::uint32_t& last) const
    {
        float lo = 0.0f;
        float hi = 0.0f;
        range(axis, t0, t1, lo, hi);
        first = std::max(lowest, clampedIndex((lo - margin) / size, highest));
        last = std::min(highest, clampedIndex((hi + margin) / size, highest));
        return first <= last;
    }

    /// Whether the ray's heights over [t0, t1], widened by the margin, meet [minY, maxY].
    bool meetsHeights(float t0, float t1, float minY, float maxY) const
    {
        float lo = 0.0f;
        float hi = 0.0f;
        range(1, t0, t1, lo, hi);
        return hi + margin >= minY && lo - margin <= maxY;
    }
};

/// Index k of the range [first, last], visited forwards or backwards.
std::uint32_t nth(std::uint32_t first, std::uint32_t last, std::uint32_t k, bool forward)
{
    return forward ? first + k : last - k;
}

} // namespace

const char* toString(HeightFieldError error)
{
    switch (error)
    {
    case HeightFieldError::None:
        return "None";
    case HeightFieldError::TooFewSamples:
        return "TooFewSamples";
    case HeightFieldError::TooManySamples:
        return "TooManySamples";
    case HeightFieldError::BadCellSize:
        return "BadCellSize";
    case HeightFieldError::BadHeightScale:
        return "BadHeightScale";
    case HeightFieldError::NonFiniteHeight:
        return "NonFiniteHeight";
    case HeightFieldError::HeightOutOfRange:
        return "HeightOutOfRange";
    case HeightFieldError::HeightCountMismatch:
        return "HeightCountMismatch";
    case HeightFieldError::HoleMaskSizeMismatch:
        return "HoleMaskSizeMismatch";
    }
    return "Unknown";
}

HeightFieldBuildResult HeightField::build(const HeightFieldDesc& desc)
{
    const std::uint32_t nx = desc.sampleCountX;
    const std::uint32_t nz = desc.sampleCountZ;
    if (nx < kMinHeightFieldSamplesPerSide || nz < kMinHeightFieldSamplesPerSide)
    {
        return failure(HeightFieldError::TooFewSamples,
                       "need at least 2 x 2 samples, got " + std::to_string(nx) + " x " + std::to_string(nz));
    }
    if (nx > kMaxHeightFieldSamplesPerSide || nz > kMaxHeightFieldSamplesPerSide)
    {
        return failure(HeightFieldError::TooManySamples,
                       "at most 4097 x 4097 samples, got " + std::to_string(nx) + " x " + std::to_string(nz));
    }
    const std::uint32_t cellsX = nx - 1;
    const std::uint32_t cellsZ = nz - 1;
    for (const float size : {desc.cellSizeX, desc.cellSizeZ})
    {
        if (!std::isfinite(size) || !(size > 0.0f))
        {
            return failure(HeightFieldError::BadCellSize, "cell sizes must be finite and > 0");
        }
    }
    if (double(cellsX) * desc.cellSizeX > kMaxHeightFieldExtentMeters ||
        double(cellsZ) * desc.cellSizeZ > kMaxHeightFieldExtentMeters)
    {
        return failure(HeightFieldError::BadCellSize, "the field is wider than 1e6 m");
    }

    const std::size_t sampleCount = std::size_t(nx) * nz;
    const bool fromFloats = !desc.heights.empty();
    if (fromFloats == !desc.samples.empty())
    {
        return failure(HeightFieldError::HeightCountMismatch, "give exactly one of heights and samples");
    }
    const std::size_t given = fromFloats ? desc.heights.size() : desc.samples.size();
    if (given != sampleCount)
    {
        return failure(HeightFieldError::HeightCountMismatch,
                       "expected " + std::to_string(sampleCount) + " samples, got " + std::to_string(given));
    }
    const std::size_t cellCount = std::size_t(cellsX) * cellsZ;
    const std::size_t maskBytes = (cellCount + 7) / 8;
    if (!desc.holeMask.empty() && desc.holeMask.size() != maskBytes)
    {
        return failure(HeightFieldError::HoleMaskSizeMismatch,
                       "hole mask must be empty or " + std::to_string(maskBytes) + " bytes, got " +
                           std::to_string(desc.holeMask.size()));
    }

    HeightFieldBuildResult result;
    HeightField& field = result.heightField;
    field.m_cellSizeX = desc.cellSizeX;
    field.m_cellSizeZ = desc.cellSizeZ;
    field.m_samples.resize(sampleCount);
    std::uint16_t minSample = kMaxSample;
    std::uint16_t maxSample = 0;

    if (fromFloats)
    {
        float minHeight = std::numeric_limits<float>::infinity();
        float maxHeight = -minHeight;
        for (std::size_t i = 0; i < sampleCount; ++i)
        {
            const float h = desc.heights[i];
            if (!std::isfinite(h))
            {
                return failure(HeightFieldError::NonFiniteHeight,
                               "height " + std::to_string(i) + " is not finite");
            }
            minHeight = std::min(minHeight, h);
            maxHeight = std::max(maxHeight, h);
        }
        if (std::fabs(minHeight) > kMaxHeightFieldExtentMeters ||
            std::fabs(maxHeight) > kMaxHeightFieldExtentMeters)
        {
            return failure(HeightFieldError::HeightOutOfRange, "heights must lie within 1e6 m of 0");
        }
        // Quantization: offset = the lowest height, 65535 steps up to the highest. Each sample takes the
        // step whose stored height (computed as the queries compute it) is nearest the given one.
        field.m_heightOffset = minHeight;
        field.m_heightScale =
            std::max((maxHeight - minHeight) / float(kMaxSample), std::numeric_limits<float>::min());
        double maxError = 0.0;
        for (std::size_t i = 0; i < sampleCount; ++i)
        {
            const float h = desc.heights[i];
            const double steps = std::round((double(h) - field.m_heightOffset) / field.m_heightScale);
            const std::uint32_t guess = std::uint32_t(std::clamp(steps, 0.0, double(kMaxSample)));
            std::uint16_t best = 0;
            double bestError = std::numeric_limits<double>::infinity();
            for (std::uint32_t q = guess == 0 ? 0 : guess - 1;
                 q <= std::min<std::uint32_t>(guess + 1, kMaxSample); ++q)
            {
                const double error = std::fabs(double(field.heightOf(std::uint16_t(q))) - double(h));
                if (error < bestError)
                {
                    bestError = error;
                    best = std::uint16_t(q);
                }
            }
            field.m_samples[i] = best;
            maxError = std::max(maxError, bestError);
            minSample = std::min(minSample, best);
            maxSample = std::max(maxSample, best);
        }
        float reported = float(maxError);
        if (double(reported) < maxError)
        {
            reported = std::nextafter(reported, std::numeric_limits<float>::infinity());
        }
        result.maxQuantizationErrorMeters = reported;
    }
    else
    {
        if (!std::isfinite(desc.heightScale) || !(desc.heightScale > 0.0f))
        {
            return failure(HeightFieldError::BadHeightScale, "height scale must be finite and > 0");
        }
        if (!std::isfinite(desc.heightOffset))
        {
            return failure(HeightFieldError::NonFiniteHeight, "height offset is not finite");
        }
        std::copy(desc.samples.begin(), desc.samples.end(), field.m_samples.begin());
        for (const std::uint16_t s : field.m_samples)
        {
            minSample = std::min(minSample, s);
            maxSample = std::max(maxSample, s);
        }
        field.m_heightScale = desc.heightScale;
        field.m_heightOffset = desc.heightOffset;
        const float low = field.heightOf(minSample);
        const float high = field.heightOf(maxSample);
        if (!(std::fabs(low) <= kMaxHeightFieldExtentMeters) ||
            !(std::fabs(high) <= kMaxHeightFieldExtentMeters))
        {
            return failure(HeightFieldError::HeightOutOfRange, "heights must lie within 1e6 m of 0");
        }
    }

    field.m_cellCountX = cellsX;
    field.m_cellCountZ = cellsZ;
    if (!desc.holeMask.empty())
    {
        field.m_holes.assign(desc.holeMask.begin(), desc.holeMask.end());
        if (cellCount % 8 != 0)
        {
            field.m_holes.back() &= std::uint8_t((1u << (cellCount % 8)) - 1u);
        }
        if (std::all_of(field.m_holes.begin(), field.m_holes.end(), [](std::uint8_t b) { return b == 0; }))
        {
            field.m_holes = {};
        }
    }

    field.m_blockCountX = (cellsX + kBlock - 1) / kBlock;
    field.m_blockCountZ = (cellsZ + kBlock - 1) / kBlock;
    field.m_blocks.assign(std::size_t(field.m_blockCountX) * field.m_blockCountZ, BlockRange{kMaxSample, 0});
    for (std::uint32_t cz = 0; cz < cellsZ; ++cz)
    {
        const std::uint16_t* row0 = field.m_samples.data() + std::size_t(cz) * nx;
        const std::uint16_t* row1 = row0 + nx;
        BlockRange* blockRow = field.m_blocks.data() + std::size_t(cz / kBlock) * field.m_blockCountX;
        for (std::uint32_t cx = 0; cx < cellsX; ++cx)
        {
            if (field.isHole(cz * cellsX + cx))
            {
                continue;
            }
            const std::uint16_t lo =
                std::min(std::min(row0[cx], row0[cx + 1]), std::min(row1[cx], row1[cx + 1]));
            const std::uint16_t hi =
                std::max(std::max(row0[cx], row0[cx + 1]), std::max(row1[cx], row1[cx + 1]));
            BlockRange& block = blockRow[cx / kBlock];
            block.minSample = std::min(block.minSample, lo);
            block.maxSample = std::max(block.maxSample, hi);
        }
    }

    field.m_bounds = {Vec3{0.0f, field.heightOf(minSample), 0.0f},
                      Vec3{float(cellsX) * field.m_cellSizeX, field.heightOf(maxSample),
                           float(cellsZ) * field.m_cellSizeZ}};
    return result;
}

std::size_t HeightField::memoryBytes() const
{
    return sizeof(HeightField) + m_samples.capacity() * sizeof(std::uint16_t) +
           m_blocks.capacity() * sizeof(BlockRange) + m_holes.capacity() * sizeof(std::uint8_t);
}

HeightFieldPoint HeightField::height(float x, float z) const
{
    HeightFieldPoint out;
    if (empty() || !(x >= 0.0f) || !(z >= 0.0f) || !(x <= m_bounds.max.x) || !(z <= m_bounds.max.z))
    {
        return out;
    }
    const float fx = x / m_cellSizeX;
    const float fz = z / m_cellSizeZ;
    const std::uint32_t cx = clampedIndex(fx, m_cellCountX - 1);
    const std::uint32_t cz = clampedIndex(fz, m_cellCountZ - 1);
    const std::uint32_t cell = cz * m_cellCountX + cx;
    if (isHole(cell))
    {
        return out;
    }
    const float u = std::clamp(fx - float(cx), 0.0f, 1.0f);
    const float v = std::clamp(fz - float(cz), 0.0f, 1.0f);
    const float h00 = heightOf(sample(cx, cz));
    const float h10 = heightOf(sample(cx + 1, cz));
    const float h01 = heightOf(sample(cx, cz + 1));
    const float h11 = heightOf(sample(cx + 1, cz + 1));
    const bool second = u > v;
    out.hasSurface = true;
    out.heightMeters =
        second ? h00 + u * (h10 - h00) + v * (h11 - h10) : h00 + u * (h11 - h01) + v * (h01 - h00);
    out.triangleIndex = 2 * cell + (second ? 1u : 0u);
    out.normal = normal(out.triangleIndex);
    return out;
}

Triangle HeightField::triangle(std::uint32_t triangleIndex) const
{
    assert(triangleIndex < triangleCount());
    const std::uint32_t cell = triangleIndex >> 1;
    const std::uint32_t cx = cell % m_cellCountX;
    const std::uint32_t cz = cell / m_cellCountX;
    const Vec3 p00 = vertex(cx, cz);
    const Vec3 p11 = vertex(cx + 1, cz + 1);
    if ((triangleIndex & 1u) == 0)
    {
        return {p00, vertex(cx, cz + 1), p11};
    }
    return {p11, vertex(cx + 1, cz), p00};
}

Vec3 HeightField::normal(std::uint32_t triangleIndex) const
{
    const Triangle t = triangle(triangleIndex);
    return normalizeOr(cross(t.b - t.a, t.c - t.a), Vec3{0.0f, 1.0f, 0.0f});
}

bool HeightField::convexBeyondThreshold(std::uint32_t triangleA, std::uint32_t triangleB, int edge) const
{
    // The pair is taken in index order so that both triangles compute the same numbers and agree.
    const std::uint32_t first = std::min(triangleA, triangleB);
    const std::uint32_t second = std::max(triangleA, triangleB);
    const Triangle t1 = triangle(first);
    const Triangle t2 = triangle(second);
    const Vec3 n1 = normal(first);
    const Vec3 n2 = normal(second);
    // Edge slot e (ab, bc, ca) is the same in both triangles; its first vertex on t1, and t2's vertex
    // opposite it.
    const Vec3 onEdge = edge == 0 ? t1.a : (edge == 1 ? t1.b : t1.c);
    const Vec3 opposite = edge == 0 ? t2.c : (edge == 1 ? t2.a : t2.b);
    const bool convex = dot(n1, opposite - onEdge) < 0.0f;
    return convex && dot(n1, n2) < kHeightFieldActiveEdgeCosAngle;
}

std::uint8_t HeightField::activeEdges(std::uint32_t triangleIndex) const
{
    assert(triangleIndex < triangleCount());
    const std::uint32_t cell = triangleIndex >> 1;
    if (isHole(cell))
    {
        return 0;
    }
    const std::uint32_t cx = cell % m_cellCountX;
    const std::uint32_t cz = cell / m_cellCountX;
    const bool second = (triangleIndex & 1u) != 0;
    std::uint8_t active = 0;
    for (int edge = 0; edge < 3; ++edge)
    {
        // The neighbour across each edge is the other kind of triangle (see the layout in the header).
        bool boundary = false;
        std::uint32_t neighbourCell = cell;
        if (edge == 0)
        {
            boundary = second ? cx + 1 == m_cellCountX : cx == 0;
            neighbourCell = second ? cell + 1 : cell - 1;
        }
        else if (edge == 1)
        {
            boundary = second ? cz == 0 : cz + 1 == m_cellCountZ;
            neighbourCell = second ? cell - m_cellCountX : cell + m_cellCountX;
        }
        const std::uint32_t neighbour = 2 * neighbourCell + (second ? 0u : 1u);
        if (boundary || isHole(neighbourCell) || convexBeyondThreshold(triangleIndex, neighbour, edge))
        {
            active = std::uint8_t(active | (1u << edge));
        }
    }
    return active;
}

void HeightField::visitOverlapping(const Aabb& box, TriangleVisitor visitor, void* context) const
{
    if (empty() || !isFinite(box.min) || !isFinite(box.max) || !box.overlaps(m_bounds))
    {
        return;
    }
    std::uint32_t firstX = 0, lastX = 0, firstZ = 0, lastZ = 0;
    if (!exactCellRange(box.min.x, box.max.x, m_cellSizeX, m_cellCountX, firstX, lastX) ||
        !exactCellRange(box.min.z, box.max.z, m_cellSizeZ, m_cellCountZ, firstZ, lastZ))
    {
        return;
    }
    for (std::uint32_t bz = firstZ / kBlock; bz <= lastZ / kBlock; ++bz)
    {
        for (std::uint32_t bx = firstX / kBlock; bx <= lastX / kBlock; ++bx)
        {
            const BlockRange& block = m_blocks[std::size_t(bz) * m_blockCountX + bx];
            if (block.minSample > block.maxSample || heightOf(block.maxSample) < box.min.y ||
                heightOf(block.minSample) > box.max.y)
            {
                continue;
            }
            const std::uint32_t z0 = std::max(firstZ, bz * kBlock);
            const std::uint32_t z1 = std::min(lastZ, bz * kBlock + kBlock - 1);
            const std::uint32_t x0 = std::max(firstX, bx * kBlock);
            const std::uint32_t x1 = std::min(lastX, bx * kBlock + kBlock - 1);
            for (std::uint32_t cz = z0; cz <= z1; ++cz)
            {
                for (std::uint32_t cx = x0; cx <= x1; ++cx)
                {
                    const std::uint32_t cell = cz * m_cellCountX + cx;
                    if (isHole(cell))
                    {
                        continue;
                    }
                    for (std::uint32_t kind = 0; kind < 2; ++kind)
                    {
                        const Triangle t = triangle(2 * cell + kind);
                        if (boundsOf(t).overlaps(box) && !visitor(context, 2 * cell + kind, t))
                        {
                            return;
                        }
                    }
                }
            }
        }
    }
}

bool HeightField::castRay(const RayCastInput& ray, HeightFieldRayMode mode, HeightFieldRayHit& hit) const
{
    assert(mode != HeightFieldRayMode::All && "mode All needs the callback form of castRay");
    return castRayImpl(ray, mode == HeightFieldRayMode::All ? HeightFieldRayMode::Closest : mode, nullptr,
                       nullptr, &hit);
}

bool HeightField::castRayImpl(const RayCastInput& ray, HeightFieldRayMode mode, RayHitVisitor visitor,
                              void* context, HeightFieldRayHit* out) const
{
    const Vec3& o = ray.origin;
    const Vec3& d = ray.translation;
    const float maxFraction = ray.maxFraction;
    if (empty() || !isFinite(o) || !isFinite(d) || !std::isfinite(maxFraction) || !(maxFraction >= 0.0f) ||
        (d.x == 0.0f && d.y == 0.0f && d.z == 0.0f))
    {
        return 0;
    }
    const Vec3 reach = absPerElem(d) * maxFraction;
    const Vec3 boundsReach = maxPerElem(absPerElem(m_bounds.min), absPerElem(m_bounds.max));
    const float magnitude = std::max({std::fabs(o.x), std::fabs(o.y), std::fabs(o.z), reach.x, reach.y,
                                      reach.z, boundsReach.x, boundsReach.y, boundsReach.z});
    if (!std::isfinite(magnitude))
    {
        return 0;
    }
    RayWalk walk;
    walk.origin = o;
    walk.direction = d;
    walk.margin = kRayMarginCells * std::min(m_cellSizeX, m_cellSizeZ) + kRayMarginRelative * magnitude;
    for (int axis = 0; axis < 3; ++axis)
    {
        walk.parallel[axis] = reach[axis] <= 0.25f * walk.margin;
    }

    float tEnter = 0.0f;
    float tExit = maxFraction;
    for (int axis = 0; axis < 3; ++axis)
    {
        if (!walk.clip(axis, m_bounds.min[axis], m_bounds.max[axis], tEnter, tExit))
        {
            return 0;
        }
    }

    // `clip` bounds both the walk and rayTriangle: the best hit so far for Closest (rayTriangle accepts
    // t == maxFraction, so ties are seen and go to the smaller triangle index), the callback's clip for All.
    RayCastInput tested = ray;
    float clip = maxFraction;
    HeightFieldRayHit best;
    bool found = false;
    const auto limit = [&]() { return std::min(tExit, clip); };
    const auto report = [&](const HeightFieldRayHit& hit)
    {
        if (out != nullptr)
        {
            *out = hit;
            return 0.0f;
        }
        return visitor(context, hit);
    };

    const bool forwardX = d.x >= 0.0f;
    const bool forwardZ = d.z >= 0.0f;
    const float blockSizeX = float(kBlock) * m_cellSizeX;
    const float blockSizeZ = float(kBlock) * m_cellSizeZ;
    std::uint32_t firstBz = 0, lastBz = 0;
    if (!walk.cells(2, tEnter, tExit, blockSizeZ, 0, m_blockCountZ - 1, firstBz, lastBz))
    {
        return 0;
    }
    for (std::uint32_t kz = 0; kz <= lastBz - firstBz; ++kz)
    {
        const std::uint32_t bz = nth(firstBz, lastBz, kz, forwardZ);
        const std::uint32_t rowFirst = bz * kBlock;
        const std::uint32_t rowLast = std::min(rowFirst + kBlock, m_cellCountZ) - 1;
        float rowT0 = tEnter;
        float rowT1 = limit();
        if (!walk.clip(2, float(rowFirst) * m_cellSizeZ, float(rowLast + 1) * m_cellSizeZ, rowT0, rowT1))
        {
            continue;
        }
        std::uint32_t firstBx = 0, lastBx = 0;
        if (!walk.cells(0, rowT0, rowT1, blockSizeX, 0, m_blockCountX - 1, firstBx, lastBx))
        {
            continue;
        }
        for (std::uint32_t kx = 0; kx <= lastBx - firstBx; ++kx)
        {
            const std::uint32_t bx = nth(firstBx, lastBx, kx, forwardX);
            const std::uint32_t colFirst = bx * kBlock;
            const std::uint32_t colLast = std::min(colFirst + kBlock, m_cellCountX) - 1;
            float blockT0 = rowT0;
            float blockT1 = std::min(rowT1, limit());
            const BlockRange& block = m_blocks[std::size_t(bz) * m_blockCountX + bx];
            if (block.minSample > block.maxSample ||
                !walk.clip(0, float(colFirst) * m_cellSizeX, float(colLast + 1) * m_cellSizeX, blockT0,
                           blockT1) ||
                !walk.meetsHeights(blockT0, blockT1, heightOf(block.minSample), heightOf(block.maxSample)))
            {
                continue;
            }
            std::uint32_t firstCz = 0, lastCz = 0;
            if (!walk.cells(2, blockT0, blockT1, m_cellSizeZ, rowFirst, rowLast, firstCz, lastCz))
            {
                continue;
            }
            for (std::uint32_t jz = 0; jz <= lastCz - firstCz; ++jz)
            {
                const std::uint32_t cz = nth(firstCz, lastCz, jz, forwardZ);
                float cellRowT0 = blockT0;
                float cellRowT1 = std::min(blockT1, limit());
                std::uint32_t firstCx = 0, lastCx = 0;
                if (!walk.clip(2, float(cz) * m_cellSizeZ, float(cz + 1) * m_cellSizeZ, cellRowT0,
                               cellRowT1) ||
                    !walk.cells(0, cellRowT0, cellRowT1, m_cellSizeX, colFirst, colLast, firstCx, lastCx))
                {
                    continue;
                }
                for (std::uint32_t jx = 0; jx <= lastCx - firstCx; ++jx)
                {
                    const std::uint32_t cx = nth(firstCx, lastCx, jx, forwardX);
                    const std::uint32_t cell = cz * m_cellCountX + cx;
                    float cellT0 = cellRowT0;
                    float cellT1 = std::min(cellRowT1, limit());
                    if (isHole(cell) ||
                        !walk.clip(0, float(cx) * m_cellSizeX, float(cx + 1) * m_cellSizeX, cellT0, cellT1))
                    {
                        continue;
                    }
                    const std::uint16_t s00 = sample(cx, cz), s10 = sample(cx + 1, cz);
                    const std::uint16_t s01 = sample(cx, cz + 1), s11 = sample(cx + 1, cz + 1);
                    const std::uint16_t lo = std::min(std::min(s00, s10), std::min(s01, s11));
                    const std::uint16_t hi = std::max(std::max(s00, s10), std::max(s01, s11));
                    if (!walk.meetsHeights(cellT0, cellT1, heightOf(lo), heightOf(hi)))
                    {
                        continue;
                    }
                    for (std::uint32_t kind = 0; kind < 2; ++kind)
                    {
                        const std::uint32_t index = 2 * cell + kind;
                        tested.maxFraction = clip;
                        HeightFieldRayHit candidate;
                        if (!rayTriangle(triangle(index), tested, candidate.hit, &candidate.backFace))
                        {
                            continue;
                        }
                        candidate.triangle = index;
                        if (mode == HeightFieldRayMode::Closest)
                        {
                            if (!found || candidate.hit.fraction < best.hit.fraction ||
                                (candidate.hit.fraction == best.hit.fraction && index < best.triangle))
                            {
                                best = candidate;
                                found = true;
                                clip = candidate.hit.fraction;
                            }
                            continue;
                        }
                        if (mode == HeightFieldRayMode::Any)
                        {
                            report(candidate);
                            return true;
                        }
                        found = true;
                        const float next = report(candidate);
                        if (next == 0.0f)
                        {
                            return true;
                        }
                        if (next > 0.0f && next < clip)
                        {
                            clip = next;
                        }
                    }
                }
            }
        }
    }
    if (found && mode == HeightFieldRayMode::Closest)
    {
        report(best);
    }
    return found;
}

} // namespace polytope::physics
