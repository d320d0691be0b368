// HeightField: seeded random fields (with and without holes) checked against brute force over every
// triangle (box queries, closest / any / all ray hits, height), quantization within its reported bound,
// refusal of bad descriptions, active edges on flat, ridge, valley and holed fields, and a 4097 x 4097 build.
#include "polytope/physics/heightfield.h"
#include "support/allocation_counter.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <span>
#include <utility>
#include <vector>

using namespace polytope::physics;

namespace
{

float uniform(std::mt19937& rng, float lo, float hi)
{
    return std::uniform_real_distribution<float>(lo, hi)(rng);
}

int uniformInt(std::mt19937& rng, int lo, int hi)
{
    return std::uniform_int_distribution<int>(lo, hi)(rng);
}

std::vector<std::uint8_t> packHoles(const std::vector<bool>& holes)
{
    std::vector<std::uint8_t> mask((holes.size() + 7) / 8, 0);
    for (std::size_t c = 0; c < holes.size(); ++c)
    {
        if (holes[c])
        {
            mask[c / 8] = std::uint8_t(mask[c / 8] | (1u << (c % 8)));
        }
    }
    return mask;
}

/// A random field: smooth hills plus noise from float heights, or raw samples over a small range (many
/// equal heights, flat patches and exact ties); optionally with about a fifth of the cells holes.
HeightField randomField(std::mt19937& rng, bool withHoles)
{
    const std::uint32_t nx = std::uint32_t(uniformInt(rng, 2, 45));
    const std::uint32_t nz = std::uint32_t(uniformInt(rng, 2, 45));
    HeightFieldDesc desc;
    desc.sampleCountX = nx;
    desc.sampleCountZ = nz;
    desc.cellSizeX = uniform(rng, 0.25f, 3.0f);
    desc.cellSizeZ = uniformInt(rng, 0, 3) == 0 ? desc.cellSizeX : uniform(rng, 0.25f, 3.0f);
    std::vector<float> heights;
    std::vector<std::uint16_t> samples;
    if (uniformInt(rng, 0, 2) != 0)
    {
        const float amplitude = uniform(rng, 0.0f, 8.0f);
        const float noise = uniform(rng, 0.0f, 1.0f);
        const float kx = uniform(rng, 0.05f, 1.0f);
        const float kz = uniform(rng, 0.05f, 1.0f);
        const float base = uniform(rng, -20.0f, 20.0f);
        for (std::uint32_t iz = 0; iz < nz; ++iz)
        {
            for (std::uint32_t ix = 0; ix < nx; ++ix)
            {
                heights.push_back(base + amplitude * std::sin(kx * float(ix)) * std::cos(kz * float(iz)) +
                                  uniform(rng, 0.0f, noise));
            }
        }
        desc.heights = heights;
    }
    else
    {
        const int range = uniformInt(rng, 0, 6);
        for (std::size_t i = 0; i < std::size_t(nx) * nz; ++i)
        {
            samples.push_back(std::uint16_t(1000 + uniformInt(rng, 0, range)));
        }
        desc.samples = samples;
        desc.heightScale = uniform(rng, 0.05f, 1.0f);
        desc.heightOffset = uniform(rng, -1000.0f, -990.0f);
    }
    std::vector<std::uint8_t> mask;
    if (withHoles)
    {
        std::vector<bool> holes(std::size_t(nx - 1) * (nz - 1));
        for (std::size_t c = 0; c < holes.size(); ++c)
        {
            holes[c] = uniformInt(rng, 0, 4) == 0;
        }
        mask = packHoles(holes);
        desc.holeMask = mask;
    }
    HeightFieldBuildResult built = buildHeightField(desc);
    REQUIRE(built.ok());
    return std::move(built.heightField);
}

Aabb boundsOf(const Triangle& t)
{
    return {minPerElem(minPerElem(t.a, t.b), t.c), maxPerElem(maxPerElem(t.a, t.b), t.c)};
}

bool isHoleTriangle(const HeightField& field, std::uint32_t triangle)
{
    return field.isHole(triangle / 2);
}

/// Closest hit over every non-hole triangle; ties go to the smaller index.
bool bruteClosest(const HeightField& field, const RayCastInput& ray, std::uint32_t& triangle,
                  RayCastHit& best)
{
    bool found = false;
    for (std::uint32_t i = 0; i < field.triangleCount(); ++i)
    {
        RayCastHit hit;
        if (!isHoleTriangle(field, i) && rayTriangle(field.triangle(i), ray, hit) &&
            (!found || hit.fraction < best.fraction))
        {
            found = true;
            best = hit;
            triangle = i;
        }
    }
    return found;
}

std::set<std::uint32_t> bruteAll(const HeightField& field, const RayCastInput& ray)
{
    std::set<std::uint32_t> hits;
    for (std::uint32_t i = 0; i < field.triangleCount(); ++i)
    {
        RayCastHit hit;
        if (!isHoleTriangle(field, i) && rayTriangle(field.triangle(i), ray, hit))
        {
            hits.insert(i);
        }
    }
    return hits;
}

/// A grid coordinate computed as the field computes its vertices.
float gridX(const HeightField& field, std::uint32_t ix)
{
    return float(ix) * field.cellSizeX();
}
float gridZ(const HeightField& field, std::uint32_t iz)
{
    return float(iz) * field.cellSizeZ();
}

/// A ray of one of several kinds: random segments, vertical rays (also through grid points), rays along
/// grid lines and cell diagonals, rays from far away, from below, and horizontal rays.
RayCastInput randomRay(std::mt19937& rng, const HeightField& field, int kind)
{
    const Aabb b = field.localBounds();
    const float ex = b.max.x;
    const float ez = b.max.z;
    const float ey = b.max.y - b.min.y + 1.0f;
    const auto px = [&]() { return uniform(rng, -0.2f * ex - 1.0f, 1.2f * ex + 1.0f); };
    const auto pz = [&]() { return uniform(rng, -0.2f * ez - 1.0f, 1.2f * ez + 1.0f); };
    const auto py = [&]() { return uniform(rng, b.min.y - 0.5f * ey, b.max.y + 0.5f * ey); };
    const auto ix = [&]() { return std::uint32_t(uniformInt(rng, 0, int(field.cellCountX()))); };
    const auto iz = [&]() { return std::uint32_t(uniformInt(rng, 0, int(field.cellCountZ()))); };
    RayCastInput ray;
    switch (kind)
    {
    case 0: // random segment
        ray.origin = {px(), py(), pz()};
        ray.translation = Vec3{px(), py(), pz()} - ray.origin;
        break;
    case 1: // straight down from above, anywhere
        ray.origin = {px(), b.max.y + uniform(rng, 0.0f, 3.0f), pz()};
        ray.translation = {0.0f, -(ey + 5.0f), 0.0f};
        break;
    case 2: // vertical through a grid point, up or down
        ray.origin = {gridX(field, ix()), py(), gridZ(field, iz())};
        ray.translation = {0.0f, uniformInt(rng, 0, 1) == 0 ? ey : -ey, 0.0f};
        break;
    case 3: // along a grid line x = const
        ray.origin = {gridX(field, ix()), py(), pz()};
        ray.translation = {0.0f, uniform(rng, -ey, ey), pz() - ray.origin.z};
        break;
    case 4: // along a grid line z = const
        ray.origin = {px(), py(), gridZ(field, iz())};
        ray.translation = {px() - ray.origin.x, uniform(rng, -ey, ey), 0.0f};
        break;
    case 5: // along cell diagonals, through grid corners
    {
        const float s = float(uniformInt(rng, 1, 20)) * (uniformInt(rng, 0, 1) == 0 ? 1.0f : -1.0f);
        const float flip = uniformInt(rng, 0, 1) == 0 ? 1.0f : -1.0f;
        ray.origin = {gridX(field, ix()), py(), gridZ(field, iz())};
        ray.translation = {s * field.cellSizeX(), uniform(rng, -ey, ey), flip * s * field.cellSizeZ()};
        break;
    }
    case 6: // from far away, long, with a random maxFraction
    {
        const float angle = uniform(rng, 0.0f, 2.0f * kPi);
        const float distance = uniform(rng, 200.0f, 2000.0f);
        const Vec3 centre{0.5f * ex, 0.5f * (b.min.y + b.max.y), 0.5f * ez};
        ray.origin = centre + Vec3{distance * std::cos(angle), uniform(rng, -0.5f, 3.0f) * ey,
                                   distance * std::sin(angle)};
        ray.translation = (Vec3{px(), py(), pz()} - ray.origin) * 2.0f;
        ray.maxFraction = uniform(rng, 0.3f, 1.0f);
        break;
    }
    case 7: // from below, upwards (back faces)
        ray.origin = {px(), b.min.y - uniform(rng, 0.0f, 2.0f), pz()};
        ray.translation = Vec3{px(), b.max.y + 1.0f, pz()} - ray.origin;
        break;
    case 8: // horizontal, inside the height range
        ray.origin = {px(), uniform(rng, b.min.y, b.max.y), pz()};
        ray.translation = {px() - ray.origin.x, 0.0f, pz() - ray.origin.z};
        break;
    case 9: // grazing, from far away, aimed just above or below the surface
    {
        const float angle = uniform(rng, 0.0f, 2.0f * kPi);
        const float distance = std::pow(10.0f, uniform(rng, 2.0f, 4.3f));
        const float slope =
            std::pow(10.0f, uniform(rng, -4.0f, -1.0f)) * (uniformInt(rng, 0, 1) == 0 ? 1.0f : -1.0f);
        const float tx = uniform(rng, 0.0f, ex);
        const float tz = uniform(rng, 0.0f, ez);
        const HeightFieldPoint at = field.height(tx, tz);
        const Vec3 target{tx, (at.hasSurface ? at.heightMeters : b.min.y) + uniform(rng, -0.1f, 0.1f), tz};
        ray.origin = target + Vec3{distance * std::cos(angle), distance * slope, distance * std::sin(angle)};
        ray.translation = (target - ray.origin) * 1.5f;
        break;
    }
    default: // short random segment, maxFraction below 1
        ray.origin = {px(), py(), pz()};
        ray.translation =
            Vec3{uniform(rng, -3.0f, 3.0f), uniform(rng, -3.0f, 3.0f), uniform(rng, -3.0f, 3.0f)};
        ray.maxFraction = uniform(rng, 0.0f, 1.0f);
        break;
    }
    return ray;
}

constexpr int kRayKinds = 11;

HeightField flatOrShaped(std::uint32_t n, float (*shape)(std::uint32_t ix, std::uint32_t iz),
                         const std::vector<bool>& holes = {})
{
    std::vector<float> heights;
    for (std::uint32_t iz = 0; iz < n; ++iz)
    {
        for (std::uint32_t ix = 0; ix < n; ++ix)
        {
            heights.push_back(shape(ix, iz));
        }
    }
    HeightFieldDesc desc;
    desc.sampleCountX = n;
    desc.sampleCountZ = n;
    desc.heights = heights;
    const std::vector<std::uint8_t> mask = holes.empty() ? std::vector<std::uint8_t>{} : packHoles(holes);
    desc.holeMask = mask;
    HeightFieldBuildResult built = buildHeightField(desc);
    REQUIRE(built.ok());
    return std::move(built.heightField);
}

} // namespace

TEST_CASE("heightfield layout: triangles wind counter-clockwise from above along the p00-p11 diagonal",
          "[heightfield]")
{
    const std::vector<std::uint16_t> samples{0, 1, 2, 4}; // (0,0) (1,0) / (0,1) (1,1)
    HeightFieldDesc desc;
    desc.sampleCountX = 2;
    desc.sampleCountZ = 2;
    desc.cellSizeX = 2.0f;
    desc.cellSizeZ = 3.0f;
    desc.samples = samples;
    const HeightFieldBuildResult built = buildHeightField(desc);
    REQUIRE(built.ok());
    const HeightField& field = built.heightField;
    REQUIRE(field.triangleCount() == 2);
    const Triangle t0 = field.triangle(0);
    const Triangle t1 = field.triangle(1);
    CHECK(t0.a == Vec3{0.0f, 0.0f, 0.0f});
    CHECK(t0.b == Vec3{0.0f, 2.0f, 3.0f});
    CHECK(t0.c == Vec3{2.0f, 4.0f, 3.0f});
    CHECK(t1.a == Vec3{2.0f, 4.0f, 3.0f});
    CHECK(t1.b == Vec3{2.0f, 1.0f, 0.0f});
    CHECK(t1.c == Vec3{0.0f, 0.0f, 0.0f});
    CHECK(field.normal(0).y > 0.0f);
    CHECK(field.normal(1).y > 0.0f);
    CHECK(field.height(0.5f, 2.0f).triangleIndex == 0); // z / 3 > x / 2
    CHECK(field.height(1.5f, 1.0f).triangleIndex == 1);
    CHECK(field.localBounds().min == Vec3{0.0f, 0.0f, 0.0f});
    CHECK(field.localBounds().max == Vec3{2.0f, 4.0f, 3.0f});
}

TEST_CASE("heightfield box queries return exactly the brute-force set", "[heightfield]")
{
    std::mt19937 rng(1234);
    int queries = 0;
    for (int f = 0; f < 40; ++f)
    {
        const HeightField field = randomField(rng, f % 2 == 1);
        const Aabb b = field.localBounds();
        for (int q = 0; q < 100; ++q)
        {
            Aabb box;
            const Vec3 c{uniform(rng, -2.0f, b.max.x + 2.0f), uniform(rng, b.min.y - 2.0f, b.max.y + 2.0f),
                         uniform(rng, -2.0f, b.max.z + 2.0f)};
            const Vec3 e{uniform(rng, 0.0f, 3.0f), uniform(rng, 0.0f, 2.0f), uniform(rng, 0.0f, 3.0f)};
            box = {c - e, c + e};
            if (q % 4 == 1) // sides on grid lines, exactly as the vertices are computed
            {
                box.min.x = gridX(field, std::uint32_t(uniformInt(rng, 0, int(field.cellCountX()))));
                box.max.z = gridZ(field, std::uint32_t(uniformInt(rng, 0, int(field.cellCountZ()))));
                box.max.x = std::max(box.max.x, box.min.x);
                box.min.z = std::min(box.min.z, box.max.z);
            }
            if (q % 4 == 2) // flat in y at a vertex height
            {
                const float y = field.vertex(0, 0).y;
                box.min.y = y;
                box.max.y = y;
            }
            std::set<std::uint32_t> expected;
            for (std::uint32_t i = 0; i < field.triangleCount(); ++i)
            {
                if (!isHoleTriangle(field, i) && boundsOf(field.triangle(i)).overlaps(box))
                {
                    expected.insert(i);
                }
            }
            std::set<std::uint32_t> got;
            bool duplicate = false;
            bool geometryMatches = true;
            field.forEachTriangleOverlapping(box,
                                             [&](std::uint32_t index, const Triangle& t)
                                             {
                                                 duplicate = duplicate || !got.insert(index).second;
                                                 const Triangle r = field.triangle(index);
                                                 geometryMatches = geometryMatches && r.a == t.a &&
                                                                   r.b == t.b && r.c == t.c;
                                                 return true;
                                             });
            CHECK_FALSE(duplicate);
            CHECK(geometryMatches);
            CHECK(got == expected);
            ++queries;
            if (expected.size() > 3)
            {
                int calls = 0;
                field.forEachTriangleOverlapping(box, [&calls](std::uint32_t, const Triangle&)
                                                 { return ++calls < 3; });
                CHECK(calls == 3);
            }
        }
    }
    CHECK(queries == 4000);

    // NaN or inverted boxes report nothing.
    const HeightField field = randomField(rng, false);
    int calls = 0;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const auto count = [&calls](std::uint32_t, const Triangle&) { ++calls; }; // the void form
    field.forEachTriangleOverlapping(Aabb{Vec3{nan, 0.0f, 0.0f}, Vec3{1.0f, 1.0f, 1.0f}}, count);
    field.forEachTriangleOverlapping(Aabb{Vec3{1.0f, 1.0f, 1.0f}, Vec3{0.0f, 0.0f, 0.0f}}, count);
    field.forEachTriangleOverlapping(Aabb{Vec3{0.0f, 1.0f, 0.0f}, Vec3{1.0f, 0.0f, 1.0f}}, count);
    HeightField{}.forEachTriangleOverlapping(Aabb{Vec3{-1e6f, -1e6f, -1e6f}, Vec3{1e6f, 1e6f, 1e6f}}, count);
    CHECK(calls == 0);
    field.forEachTriangleOverlapping(field.localBounds(), count);
    CHECK(calls == int(field.triangleCount()));
}

TEST_CASE("heightfield ray casts agree with brute force over every triangle", "[heightfield]")
{
    std::mt19937 rng(98765);
    int rays = 0;
    int hits = 0;
    int sameTriangle = 0;
    int closestMismatches = 0;
    int anyMismatches = 0;
    int allMismatches = 0;
    for (int f = 0; f < 40; ++f)
    {
        const HeightField field = randomField(rng, f % 2 == 1);
        for (int r = 0; r < 150; ++r)
        {
            const int kind = r % kRayKinds;
            const RayCastInput ray = randomRay(rng, field, kind);
            ++rays;

            std::uint32_t bruteTriangle = 0;
            RayCastHit brute;
            const bool bruteHit = bruteClosest(field, ray, bruteTriangle, brute);
            HeightFieldRayHit got;
            const bool gotHit = field.castRay(ray, HeightFieldRayMode::Closest, got);
            bool agree = bruteHit == gotHit;
            if (agree && bruteHit)
            {
                ++hits;
                sameTriangle += got.triangle == bruteTriangle ? 1 : 0;
                const float tolerance = 1e-6f * std::max(std::fabs(brute.fraction), 1e-6f);
                agree = got.triangle == bruteTriangle ||
                        std::fabs(got.hit.fraction - brute.fraction) <= tolerance;
                CHECK(isFinite(got.hit.point));
                CHECK(std::fabs(length(got.hit.normal) - 1.0f) < 1e-5f);
            }
            if (!agree)
            {
                ++closestMismatches;
                UNSCOPED_INFO("closest mismatch: field " << f << " ray " << r << " kind " << kind << " brute "
                                                         << bruteHit << " t " << brute.fraction << " tri "
                                                         << bruteTriangle << " got " << gotHit << " t "
                                                         << got.hit.fraction << " tri " << got.triangle);
            }

            // The callback form of Closest reports the same hit, once.
            int closestCalls = 0;
            HeightFieldRayHit viaCallback;
            field.castRay(ray, HeightFieldRayMode::Closest,
                          [&](const HeightFieldRayHit& h)
                          {
                              ++closestCalls;
                              viaCallback = h;
                              return 0.0f;
                          });
            CHECK(closestCalls == (gotHit ? 1 : 0));
            CHECK((!gotHit ||
                   (viaCallback.triangle == got.triangle && viaCallback.hit.fraction == got.hit.fraction)));

            // All: exactly the brute-force set, each triangle once.
            const std::set<std::uint32_t> bruteSet = bruteAll(field, ray);
            std::set<std::uint32_t> all;
            bool duplicate = false;
            const bool allCalled = field.castRay(ray, HeightFieldRayMode::All,
                                                 [&](const HeightFieldRayHit& h)
                                                 {
                                                     duplicate = duplicate || !all.insert(h.triangle).second;
                                                     return -1.0f;
                                                 });
            if (all != bruteSet || duplicate || allCalled == bruteSet.empty())
            {
                ++allMismatches;
            }

            // All, clipping the ray at every hit: fractions never exceed the clip, and the last is the
            // closest.
            if (!bruteSet.empty())
            {
                float lastClip = ray.maxFraction;
                bool withinClip = true;
                field.castRay(ray, HeightFieldRayMode::All,
                              [&](const HeightFieldRayHit& h)
                              {
                                  withinClip = withinClip && h.hit.fraction <= lastClip;
                                  lastClip = std::min(lastClip, h.hit.fraction);
                                  return h.hit.fraction;
                              });
                CHECK(withinClip);
                CHECK(lastClip == brute.fraction);
            }

            // Any: one of the hits.
            HeightFieldRayHit any;
            const bool anyHit = field.castRay(ray, HeightFieldRayMode::Any, any);
            if (anyHit == bruteSet.empty() || (anyHit && bruteSet.count(any.triangle) == 0))
            {
                ++anyMismatches;
            }

            if (bruteSet.size() > 1) // All stops when told to
            {
                std::uint32_t calls = 0;
                field.castRay(ray, HeightFieldRayMode::All,
                              [&calls](const HeightFieldRayHit&)
                              {
                                  ++calls;
                                  return 0.0f;
                              });
                CHECK(calls == 1);
            }
        }
    }
    INFO("rays " << rays << ", hits " << hits << ", same triangle " << sameTriangle);
    CHECK(closestMismatches == 0);
    CHECK(anyMismatches == 0);
    CHECK(allMismatches == 0);
    CHECK(hits > rays / 4);
    CHECK(rays == 6000);
}

TEST_CASE("heightfield rays: degenerate input reports nothing; vertical rays meet height()", "[heightfield]")
{
    std::mt19937 rng(555);
    const HeightField field = randomField(rng, false);
    const Aabb b = field.localBounds();
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    int calls = 0;
    const auto count = [&calls](const HeightFieldRayHit&)
    {
        ++calls;
        return -1.0f;
    };
    const Vec3 above{0.5f * b.max.x, b.max.y + 1.0f, 0.5f * b.max.z};
    const Vec3 down{0.0f, -(b.max.y - b.min.y) - 2.0f, 0.0f};
    CHECK_FALSE(field.castRay(RayCastInput{above, Vec3{}, 1.0f}, HeightFieldRayMode::All, count));
    CHECK_FALSE(
        field.castRay(RayCastInput{Vec3{nan, 0.0f, 0.0f}, down, 1.0f}, HeightFieldRayMode::All, count));
    CHECK_FALSE(
        field.castRay(RayCastInput{above, Vec3{0.0f, inf, 0.0f}, 1.0f}, HeightFieldRayMode::All, count));
    CHECK_FALSE(field.castRay(RayCastInput{above, down, inf}, HeightFieldRayMode::All, count));
    CHECK_FALSE(field.castRay(RayCastInput{above, down, -1.0f}, HeightFieldRayMode::All, count));
    CHECK_FALSE(
        field.castRay(RayCastInput{above, Vec3{0.0f, -3e38f, 0.0f}, 3e38f}, HeightFieldRayMode::All, count));
    CHECK(calls == 0);
    CHECK(field.castRay(RayCastInput{above, down, 1.0f}, HeightFieldRayMode::Closest, count));
    CHECK(calls == 1);
    HeightFieldRayHit hit;
    CHECK_FALSE(HeightField{}.castRay(RayCastInput{above, down, 1.0f}, HeightFieldRayMode::Closest, hit));
    CHECK_FALSE(field.castRay(RayCastInput{above, down, 0.0f}, HeightFieldRayMode::Closest, hit));

    for (int i = 0; i < 2000; ++i)
    {
        const float x = uniform(rng, 0.0f, b.max.x);
        const float z = uniform(rng, 0.0f, b.max.z);
        const HeightFieldPoint p = field.height(x, z);
        REQUIRE(p.hasSurface);
        REQUIRE(field.castRay(RayCastInput{Vec3{x, b.max.y + 1.0f, z}, down, 1.0f},
                              HeightFieldRayMode::Closest, hit));
        CHECK(std::fabs(hit.hit.point.y - p.heightMeters) <= 1e-4f * (1.0f + std::fabs(p.heightMeters)));
        CHECK_FALSE(hit.backFace);
        CHECK(hit.hit.normal.y > 0.0f);
    }
}

TEST_CASE("heightfield height() lies on the plane of the triangle it names", "[heightfield]")
{
    std::mt19937 rng(4321);
    for (int f = 0; f < 30; ++f)
    {
        const HeightField field = randomField(rng, f % 2 == 1);
        const Aabb b = field.localBounds();
        for (int q = 0; q < 300; ++q)
        {
            float x = uniform(rng, -1.0f, b.max.x + 1.0f);
            float z = uniform(rng, -1.0f, b.max.z + 1.0f);
            if (q % 5 == 0) // grid points and lines
            {
                x = gridX(field, std::uint32_t(uniformInt(rng, 0, int(field.cellCountX()))));
            }
            if (q % 7 == 0)
            {
                z = gridZ(field, std::uint32_t(uniformInt(rng, 0, int(field.cellCountZ()))));
            }
            const HeightFieldPoint p = field.height(x, z);
            const bool inside = x >= 0.0f && z >= 0.0f && x <= b.max.x && z <= b.max.z;
            if (!inside)
            {
                CHECK_FALSE(p.hasSurface);
                continue;
            }
            const std::uint32_t cx = std::min(std::uint32_t(x / field.cellSizeX()), field.cellCountX() - 1);
            const std::uint32_t cz = std::min(std::uint32_t(z / field.cellSizeZ()), field.cellCountZ() - 1);
            const std::uint32_t cell = cz * field.cellCountX() + cx;
            CHECK(p.hasSurface == !field.isHole(cell));
            if (!p.hasSurface)
            {
                continue;
            }
            CHECK(p.triangleIndex / 2 == cell);
            const Triangle t = field.triangle(p.triangleIndex);
            const Vec3 n = field.normal(p.triangleIndex);
            CHECK(p.normal == n);
            const double planeY = t.a.y - (double(n.x) * (x - t.a.x) + double(n.z) * (z - t.a.z)) / n.y;
            CHECK(std::fabs(p.heightMeters - planeY) <= 1e-4 * (1.0 + std::fabs(planeY)));
            // The point lies in the triangle's xz projection (within rounding).
            const auto side = [&](const Vec3& a, const Vec3& c)
            { return double(c.z - a.z) * (x - a.x) - double(c.x - a.x) * (z - a.z); };
            const double slack = 1e-5 * field.cellSizeX() * field.cellSizeZ();
            CHECK(side(t.a, t.b) >= -slack);
            CHECK(side(t.b, t.c) >= -slack);
            CHECK(side(t.c, t.a) >= -slack);
        }
    }
    const HeightField field = randomField(rng, false);
    CHECK_FALSE(field.height(std::numeric_limits<float>::quiet_NaN(), 0.0f).hasSurface);
    CHECK_FALSE(HeightField{}.height(0.0f, 0.0f).hasSurface);
}

TEST_CASE("heightfield quantization stays within the reported error", "[heightfield]")
{
    std::mt19937 rng(777);
    for (int f = 0; f < 30; ++f)
    {
        const std::uint32_t nx = std::uint32_t(uniformInt(rng, 2, 60));
        const std::uint32_t nz = std::uint32_t(uniformInt(rng, 2, 60));
        const float base = f % 3 == 0 ? 5000.0f : uniform(rng, -100.0f, 100.0f);
        const float range = f % 5 == 0 ? 0.0f : std::pow(10.0f, uniform(rng, -3.0f, 3.0f));
        std::vector<float> heights;
        for (std::size_t i = 0; i < std::size_t(nx) * nz; ++i)
        {
            heights.push_back(base + uniform(rng, 0.0f, range));
        }
        HeightFieldDesc desc;
        desc.sampleCountX = nx;
        desc.sampleCountZ = nz;
        desc.heights = heights;
        const HeightFieldBuildResult built = buildHeightField(desc);
        REQUIRE(built.ok());
        const HeightField& field = built.heightField;
        const float lo = *std::min_element(heights.begin(), heights.end());
        const float hi = *std::max_element(heights.begin(), heights.end());
        double worst = 0.0;
        for (std::uint32_t iz = 0; iz < nz; ++iz)
        {
            for (std::uint32_t ix = 0; ix < nx; ++ix)
            {
                worst = std::max(worst, std::fabs(double(field.vertex(ix, iz).y) - heights[iz * nx + ix]));
            }
        }
        CHECK(worst <= built.maxQuantizationErrorMeters);
        // Half a step of the 16-bit range, plus float rounding of heights this large.
        const double bound =
            0.5 * (double(hi) - lo) / 65535.0 + 4.0 * std::numeric_limits<float>::epsilon() * std::fabs(hi);
        CHECK(built.maxQuantizationErrorMeters <= bound);
        CHECK(field.localBounds().min.y <= lo + built.maxQuantizationErrorMeters);
        CHECK(field.localBounds().max.y >= hi - built.maxQuantizationErrorMeters);
        if (range == 0.0f)
        {
            CHECK(built.maxQuantizationErrorMeters == 0.0f);
        }
    }

    // Raw samples are stored as given.
    const std::vector<std::uint16_t> samples{0, 1, 65535, 300};
    HeightFieldDesc desc;
    desc.sampleCountX = 2;
    desc.sampleCountZ = 2;
    desc.samples = samples;
    desc.heightScale = 0.01f;
    desc.heightOffset = -5.0f;
    const HeightFieldBuildResult built = buildHeightField(desc);
    REQUIRE(built.ok());
    CHECK(built.maxQuantizationErrorMeters == 0.0f);
    CHECK(built.heightField.sample(1, 1) == 300);
    CHECK(built.heightField.vertex(0, 1).y == -5.0f + 0.01f * 65535.0f);
}

TEST_CASE("heightfield validation refuses bad descriptions", "[heightfield]")
{
    const std::vector<float> heights(9, 1.0f);
    const std::vector<std::uint16_t> samples(9, 7);
    const auto good = [&]()
    {
        HeightFieldDesc d;
        d.sampleCountX = 3;
        d.sampleCountZ = 3;
        d.heights = heights;
        return d;
    };
    const auto expect = [](const HeightFieldDesc& d, HeightFieldError error)
    {
        const HeightFieldBuildResult r = buildHeightField(d);
        CHECK(r.error == error);
        CHECK_FALSE(r.ok());
        CHECK_FALSE(r.message.empty());
        CHECK(r.heightField.empty());
        CHECK(std::string(toString(error)) != "Unknown");
    };
    REQUIRE(buildHeightField(good()).ok());
    CHECK(buildHeightField(good()).message.empty());

    HeightFieldDesc d = good();
    d.sampleCountX = 1;
    expect(d, HeightFieldError::TooFewSamples);
    d = good();
    d.sampleCountZ = 0;
    expect(d, HeightFieldError::TooFewSamples);
    d = good();
    d.sampleCountX = kMaxHeightFieldSamplesPerSide + 1;
    expect(d, HeightFieldError::TooManySamples);

    for (const float size :
         {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()})
    {
        d = good();
        d.cellSizeX = size;
        expect(d, HeightFieldError::BadCellSize);
        d = good();
        d.cellSizeZ = size;
        expect(d, HeightFieldError::BadCellSize);
    }
    d = good();
    d.cellSizeX = 6.0e5f; // 2 cells: 1.2e6 m
    expect(d, HeightFieldError::BadCellSize);

    d = good();
    d.heights = {};
    expect(d, HeightFieldError::HeightCountMismatch);
    d = good();
    d.samples = samples;
    expect(d, HeightFieldError::HeightCountMismatch);
    d = good();
    d.heights = std::span<const float>(heights).first(8);
    expect(d, HeightFieldError::HeightCountMismatch);

    for (const float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()})
    {
        std::vector<float> h = heights;
        h[4] = bad;
        d = good();
        d.heights = h;
        expect(d, HeightFieldError::NonFiniteHeight);
    }
    {
        std::vector<float> h = heights;
        h[2] = -2.0e6f;
        d = good();
        d.heights = h;
        expect(d, HeightFieldError::HeightOutOfRange);
    }

    const auto raw = [&]()
    {
        HeightFieldDesc r = good();
        r.heights = {};
        r.samples = samples;
        return r;
    };
    REQUIRE(buildHeightField(raw()).ok());
    for (const float scale :
         {0.0f, -1.0f, std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()})
    {
        d = raw();
        d.heightScale = scale;
        expect(d, HeightFieldError::BadHeightScale);
    }
    d = raw();
    d.heightOffset = std::numeric_limits<float>::quiet_NaN();
    expect(d, HeightFieldError::NonFiniteHeight);
    d = raw();
    d.heightScale = 2.0e5f; // 7 * 2e5 = 1.4e6 m
    expect(d, HeightFieldError::HeightOutOfRange);

    const std::vector<std::uint8_t> mask(2, 0); // 4 cells need 1 byte
    d = good();
    d.holeMask = mask;
    expect(d, HeightFieldError::HoleMaskSizeMismatch);
    d = good();
    d.holeMask = std::span<const std::uint8_t>(mask).first(1);
    CHECK(buildHeightField(d).ok());
}

namespace
{
float flat(std::uint32_t, std::uint32_t)
{
    return 2.0f;
}
float ridge(std::uint32_t ix, std::uint32_t)
{
    return -2.0f * std::fabs(float(ix) - 4.0f);
}
float valley(std::uint32_t ix, std::uint32_t)
{
    return 2.0f * std::fabs(float(ix) - 4.0f);
}
float gentleRidge(std::uint32_t ix, std::uint32_t) // bends by about 2.3 degrees: below the threshold
{
    return -0.02f * std::fabs(float(ix) - 4.0f);
}

/// The field's side of edge `edge` of triangle `t` on the grid boundary?
bool onBoundary(const HeightField& field, std::uint32_t t, int edge)
{
    const Triangle tri = field.triangle(t);
    const Vec3 p = edge == 0 ? tri.a : (edge == 1 ? tri.b : tri.c);
    const Vec3 q = edge == 0 ? tri.b : (edge == 1 ? tri.c : tri.a);
    const Aabb b = field.localBounds();
    return (p.x == q.x && (p.x == 0.0f || p.x == b.max.x)) || (p.z == q.z && (p.z == 0.0f || p.z == b.max.z));
}

/// Whether edge `edge` of triangle `t` lies on the line x = xLine.
bool onLineX(const HeightField& field, std::uint32_t t, int edge, float xLine)
{
    const Triangle tri = field.triangle(t);
    const Vec3 p = edge == 0 ? tri.a : (edge == 1 ? tri.b : tri.c);
    const Vec3 q = edge == 0 ? tri.b : (edge == 1 ? tri.c : tri.a);
    return p.x == xLine && q.x == xLine;
}
} // namespace

TEST_CASE("heightfield active edges: boundary and hole borders, convex ridges; not flat or concave",
          "[heightfield]")
{
    const std::uint32_t n = 9;
    SECTION("flat, valley and gentle ridge: only the boundary is active")
    {
        for (const auto shape : {&flat, &valley, &gentleRidge})
        {
            const HeightField field = flatOrShaped(n, shape);
            for (std::uint32_t t = 0; t < field.triangleCount(); ++t)
            {
                for (int e = 0; e < 3; ++e)
                {
                    CHECK(((field.activeEdges(t) >> e) & 1) == (onBoundary(field, t, e) ? 1 : 0));
                }
            }
        }
    }
    SECTION("ridge: the crest is active too")
    {
        const HeightField field = flatOrShaped(n, &ridge);
        int crest = 0;
        for (std::uint32_t t = 0; t < field.triangleCount(); ++t)
        {
            for (int e = 0; e < 3; ++e)
            {
                const bool expected = onBoundary(field, t, e) || onLineX(field, t, e, 4.0f);
                crest += onLineX(field, t, e, 4.0f) ? 1 : 0;
                CHECK(((field.activeEdges(t) >> e) & 1) == (expected ? 1 : 0));
            }
        }
        CHECK(crest == 2 * 8);
    }
    SECTION("hole borders are active, holes have none")
    {
        std::vector<bool> holes((n - 1) * (n - 1), false);
        const std::uint32_t hole = 3 * (n - 1) + 3;
        holes[hole] = true;
        const HeightField field = flatOrShaped(n, &flat, holes);
        CHECK(field.hasHoles());
        CHECK(field.activeEdges(2 * hole) == 0);
        CHECK(field.activeEdges(2 * hole + 1) == 0);
        const std::uint32_t left = 2 * (hole - 1) + 1;        // its x1 side (ab) faces the hole
        const std::uint32_t right = 2 * (hole + 1);           // its x0 side (ab)
        const std::uint32_t below = 2 * (hole - (n - 1));     // its z1 side (bc)
        const std::uint32_t above = 2 * (hole + (n - 1)) + 1; // its z0 side (bc)
        CHECK(field.activeEdges(left) == 1);
        CHECK(field.activeEdges(right) == 1);
        CHECK(field.activeEdges(below) == 2);
        CHECK(field.activeEdges(above) == 2);
        CHECK(field.activeEdges(left - 1) == 0);
        CHECK(field.activeEdges(right + 1) == 0);
    }
}

TEST_CASE("heightfield active edges match an independent dihedral computation", "[heightfield]")
{
    std::mt19937 rng(2468);
    int edges = 0;
    int active = 0;
    for (int f = 0; f < 20; ++f)
    {
        const HeightField field = randomField(rng, f % 2 == 1);
        // Edges keyed by their two sample indices, found from vertex positions.
        const auto key = [&](const Vec3& p)
        {
            return std::lround(p.z / field.cellSizeZ()) * long(field.cellCountX() + 1) +
                   std::lround(p.x / field.cellSizeX());
        };
        std::map<std::pair<long, long>, std::vector<std::pair<std::uint32_t, int>>> byEdge;
        for (std::uint32_t t = 0; t < field.triangleCount(); ++t)
        {
            const Triangle tri = field.triangle(t);
            const Vec3 v[3] = {tri.a, tri.b, tri.c};
            for (int e = 0; e < 3; ++e)
            {
                const long a = key(v[e]);
                const long b = key(v[(e + 1) % 3]);
                byEdge[{std::min(a, b), std::max(a, b)}].push_back({t, e});
            }
        }
        for (const auto& [edgeKey, sides] : byEdge)
        {
            for (const auto& [t, e] : sides)
            {
                const bool bit = ((field.activeEdges(t) >> e) & 1) != 0;
                ++edges;
                active += bit ? 1 : 0;
                if (isHoleTriangle(field, t))
                {
                    CHECK_FALSE(bit);
                    continue;
                }
                if (sides.size() == 1)
                {
                    CHECK(bit);
                    continue;
                }
                REQUIRE(sides.size() == 2);
                const auto [u, ue] = sides[0].first == t ? sides[1] : sides[0];
                if (isHoleTriangle(field, u))
                {
                    CHECK(bit);
                    continue;
                }
                CHECK(bit == (((field.activeEdges(u) >> ue) & 1) != 0)); // both sides agree
                // Double precision: normals, bend angle and which side the neighbour's far vertex lies.
                const auto normalD = [&](std::uint32_t i)
                {
                    const Triangle s = field.triangle(i);
                    const double e1[3] = {double(s.b.x) - s.a.x, double(s.b.y) - s.a.y,
                                          double(s.b.z) - s.a.z};
                    const double e2[3] = {double(s.c.x) - s.a.x, double(s.c.y) - s.a.y,
                                          double(s.c.z) - s.a.z};
                    double c[3] = {e1[1] * e2[2] - e1[2] * e2[1], e1[2] * e2[0] - e1[0] * e2[2],
                                   e1[0] * e2[1] - e1[1] * e2[0]};
                    const double l = std::sqrt(c[0] * c[0] + c[1] * c[1] + c[2] * c[2]);
                    return std::array<double, 3>{c[0] / l, c[1] / l, c[2] / l};
                };
                const auto n1 = normalD(t);
                const auto n2 = normalD(u);
                const double cosine = n1[0] * n2[0] + n1[1] * n2[1] + n1[2] * n2[2];
                const Triangle tu = field.triangle(u);
                const Triangle tt = field.triangle(t);
                const Vec3 farVertex = ue == 0 ? tu.c : (ue == 1 ? tu.a : tu.b);
                const double height = n1[0] * (double(farVertex.x) - tt.a.x) +
                                      n1[1] * (double(farVertex.y) - tt.a.y) +
                                      n1[2] * (double(farVertex.z) - tt.a.z);
                if (std::fabs(cosine - kHeightFieldActiveEdgeCosAngle) < 1e-5)
                {
                    continue; // too close to the threshold to call
                }
                CHECK(bit == (height < 0.0 && cosine < kHeightFieldActiveEdgeCosAngle));
            }
        }
    }
    CHECK(edges > 10000);
    CHECK(active > 0);
}

TEST_CASE("heightfield with every cell a hole reports nothing", "[heightfield]")
{
    const std::vector<float> heights{0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
    const std::vector<std::uint8_t> mask{0x03};
    HeightFieldDesc desc;
    desc.sampleCountX = 3;
    desc.sampleCountZ = 2;
    desc.heights = heights;
    desc.holeMask = mask;
    const HeightFieldBuildResult built = buildHeightField(desc);
    REQUIRE(built.ok());
    const HeightField& field = built.heightField;
    int calls = 0;
    field.forEachTriangleOverlapping(field.localBounds(),
                                     [&calls](std::uint32_t, const Triangle&) { return ++calls > 0; });
    field.castRay(RayCastInput{Vec3{0.5f, 10.0f, 0.5f}, Vec3{0.0f, -20.0f, 0.0f}, 1.0f},
                  HeightFieldRayMode::All,
                  [&calls](const HeightFieldRayHit&)
                  {
                      ++calls;
                      return -1.0f;
                  });
    CHECK(calls == 0);
    CHECK_FALSE(field.height(0.5f, 0.5f).hasSurface);
}

TEST_CASE("heightfield 4097 x 4097 builds; memory per sample is as documented", "[heightfield]")
{
    const std::uint32_t n = kMaxHeightFieldSamplesPerSide;
    std::vector<std::uint16_t> samples(std::size_t(n) * n);
    std::uint32_t state = 12345;
    for (std::uint32_t iz = 0; iz < n; ++iz)
    {
        for (std::uint32_t ix = 0; ix < n; ++ix)
        {
            state = state * 1664525u + 1013904223u;
            const float hills =
                20000.0f + 8000.0f * std::sin(0.01f * float(ix)) * std::cos(0.013f * float(iz));
            samples[std::size_t(iz) * n + ix] = std::uint16_t(hills + float(state >> 24));
        }
    }
    HeightFieldDesc desc;
    desc.sampleCountX = n;
    desc.sampleCountZ = n;
    desc.cellSizeX = 0.5f;
    desc.cellSizeZ = 0.5f;
    desc.samples = samples;
    desc.heightScale = 0.01f;
    desc.heightOffset = -100.0f;
    const HeightFieldBuildResult built = buildHeightField(desc);
    REQUIRE(built.ok());
    const HeightField& field = built.heightField;
    CHECK(field.triangleCount() == 2u * 4096u * 4096u);
    const double perSample = double(field.memoryBytes()) / (double(n) * n);
    INFO("bytes per sample " << perSample);
    CHECK(perSample <= 2.0625);
    CHECK(perSample >= 2.0);

    // A long shallow ray across the whole field: the hit lies on the surface and the ray stays above the
    // surface before it.
    const Aabb b = field.localBounds();
    const RayCastInput ray{Vec3{0.0f, b.max.y + 1.0f, 0.0f}, Vec3{b.max.x, b.min.y - b.max.y - 2.0f, b.max.z},
                           1.0f};
    HeightFieldRayHit hit;
    REQUIRE(field.castRay(ray, HeightFieldRayMode::Closest, hit));
    const HeightFieldPoint at = field.height(hit.hit.point.x, hit.hit.point.z);
    REQUIRE(at.hasSurface);
    CHECK(std::fabs(at.heightMeters - hit.hit.point.y) < 1e-2f);
    for (int i = 0; i < 1000; ++i)
    {
        const float t = hit.hit.fraction * float(i) / 1000.0f;
        const Vec3 p = ray.origin + ray.translation * t;
        CHECK(p.y >= field.height(p.x, p.z).heightMeters - 1e-2f);
    }

    // With holes, one more bit per cell.
    const std::uint32_t m = 1025;
    std::vector<std::uint8_t> mask(((m - 1) * (m - 1) + 7) / 8, 0x5A);
    HeightFieldDesc holed = desc;
    holed.sampleCountX = m;
    holed.sampleCountZ = m;
    holed.samples = std::span<const std::uint16_t>(samples).first(std::size_t(m) * m);
    holed.holeMask = mask;
    const HeightFieldBuildResult withHoles = buildHeightField(holed);
    REQUIRE(withHoles.ok());
    const double holedPerSample = double(withHoles.heightField.memoryBytes()) / (double(m) * m);
    INFO("bytes per sample with holes " << holedPerSample);
    CHECK(holedPerSample <= 2.1875);
    CHECK(holedPerSample > 2.0625);
}

TEST_CASE("heightfield queries allocate nothing", "[heightfield]")
{
    std::mt19937 rng(1357);
    const HeightField field = randomField(rng, true);
    std::vector<RayCastInput> rays;
    std::vector<Aabb> boxes;
    for (int q = 0; q < 200; ++q)
    {
        rays.push_back(randomRay(rng, field, q % kRayKinds));
        const Vec3 c = randomRay(rng, field, 0).origin;
        boxes.push_back(Aabb{c - Vec3{2.0f, 2.0f, 2.0f}, c + Vec3{2.0f, 2.0f, 2.0f}});
    }
    std::size_t total = 0;
    HeightFieldRayHit hit;
    polytope::test::AllocationCounter counter;
    for (int q = 0; q < 200; ++q)
    {
        field.forEachTriangleOverlapping(boxes[q], [&](std::uint32_t, const Triangle&) { ++total; });
        total += field.castRay(rays[q], HeightFieldRayMode::Closest, hit) ? 1 : 0;
        total += field.castRay(rays[q], HeightFieldRayMode::Any, hit) ? 1 : 0;
        field.castRay(rays[q], HeightFieldRayMode::All,
                      [&](const HeightFieldRayHit&)
                      {
                          ++total;
                          return -1.0f;
                      });
        total += field.height(boxes[q].min.x, boxes[q].min.z).hasSurface ? 1 : 0;
        total += field.activeEdges(std::uint32_t(q) % field.triangleCount());
    }
    CHECK(counter.stop() == 0);
    CHECK(total > 0);
}
