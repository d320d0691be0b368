// polytope-bench: random convex pairs for the narrowphase benchmark, with exact answers.
//
// Shapes are generated in double, rounded to float once, and those floats are what every implementation
// and the oracle see. A pair is a box pair (half extents) or a hull pair (16-32 points), each with a float
// rotation and position; the exact answer comes from minkowski_oracle.h (qhull of the Minkowski
// difference; 15-axis SAT for boxes as a cross-check).
#pragma once

#include "minkowski_oracle.h"

#include <cstdint>
#include <string>
#include <vector>

namespace polytope::bench
{

struct Float3
{
    float x, y, z;
};
struct Float4
{
    float x, y, z, w;
};

enum class PairClass
{
    Separated, ///< apart: 0 < distance
    Shallow,   ///< overlapping by at most 5% of the smaller shape's radius
    Deep,      ///< overlapping by more
};
const char* pairClassName(PairClass c);

struct ConvexShapeData
{
    bool isBox = true;
    Float3 halfExtents{};        ///< boxes
    std::vector<Float3> points;  ///< hulls: the generating points (float); boxes: the 8 corners
    float boundingRadius = 0.0f; ///< about the local origin
};

struct ConvexPair
{
    ConvexShapeData a, b;
    Float3 positionA{}, positionB{};
    Float4 rotationA{}, rotationB{}; ///< unit quaternions
    PairClass pairClass = PairClass::Separated;
    ExactAnswer exact;
};

/// `count` pairs of the class, of boxes or of hulls, from `seed`. Deterministic.
std::vector<ConvexPair> makePairs(bool boxes, PairClass pairClass, int count, std::uint64_t seed);

/// `count` resting box pairs from `seed` (class Shallow): unit cube B on unit cube A's top face, ~1 cm deep,
/// slid up to 0.2 m and twisted up to 0.3 rad about a near-vertical axis. Deterministic.
std::vector<ConvexPair> makeRestingPairs(int count, std::uint64_t seed);

/// World-space vertices (double) of one side of a pair.
std::vector<Vec3d> worldVertices(const ConvexShapeData& shape, const Float3& position,
                                 const Float4& rotation);

} // namespace polytope::bench
