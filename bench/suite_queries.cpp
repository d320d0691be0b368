// Suite "queries": the World's queries, TriangleMesh::castRay and HeightField::castRay against Bullet 3.24's
// in the same run, on the same seeded geometry (generated in float once and given to both engines as is).
//
// World cases, over N = 1000 and 10000 static bodies (spheres, boxes, capsules with random sizes and
// rotations, centres scattered in a 100 m cube). Bullet: a btCollisionWorld with btDbvtBroadphase holding
// one btCollisionObject per body (btSphereShape, btBoxShape with setMargin(0) so that its corners are
// sharp, btCapsuleShape; spheres and capsules are all margin, so exact), updateAabbs() called once.
//   ray_closest     rays of 50 m from random points outside every body, random directions:
//                   World::castRayClosest vs btCollisionWorld::rayTest with ClosestRayResultCallback
//   ray_any         the same rays: World::castRayAny vs rayTest with a callback that sets the closest
//                   fraction to 0 at the first hit (Bullet then skips every later body; its tree walk
//                   goes on to the end, calling back for nothing)
//   sphere_cast     a 0.5 m sphere swept 20 m from random starts where it touches nothing:
//                   World::castShapeClosest vs convexSweepTest with ClosestConvexResultCallback (allowed
//                   penetration 0)
//   overlap_sphere  a 2 m sphere at random points: World::overlapShape vs contactTest with a btSphereShape
//                   object (a body counts when some contact point has distance <= 0)
// Terrain cases, over a bumpy 708 x 708-cell grid (1,002,528 triangles, 1 m cells, heights 16-bit samples
// of 1/256 m, so that the heightfield's stored heights and the mesh's vertices are the same floats):
//   mesh_ray        buildTriangleMesh vs btBvhTriangleMeshShape (btTriangleIndexVertexArray over the same
//                   vertices and indices, quantized AABB compression): downward rays (up to ~35 degrees
//                   off vertical) of 60 m from 30 m up, closest hit. Polytope: TriangleMesh::castRay;
//                   Bullet: rayTest on a btCollisionWorld holding the mesh alone
//   heightfield_ray buildHeightField vs btHeightfieldTerrainShape over the same 16-bit samples (short data,
//                   heightScale 1/256, flipQuadEdges so that it splits cells along the same diagonal),
//                   with its ray accelerator (buildAccelerator(), default chunk of 16): the same rays
//
// Each case: one warm-up pass of every query, then 5 timed passes, Polytope and Bullet alternating so that
// both see the same machine load. Figures per engine: queries (per pass), queries_per_s (median pass),
// hit_ratio; on the Polytope record ratio_vs_bullet (Polytope's queries_per_s over Bullet's: above 1,
// Polytope is faster) and how the two engines' answers agree:
//   agree_ratio          queries where both hit or both miss (overlap_sphere: where both found the same set
//                        of bodies; bodies_per_query is how many Polytope found on average)
//   max_distance_diff_m  ray_closest, sphere_cast, mesh_ray, heightfield_ray: the largest difference in hit
//                        distance (fraction x length) where both hit
// World rays and casts are also judged, per engine, by an oracle (below: closed-form distances in double,
// independent of both engines) over the bodies the two engines reported:
//   wrong_ratio          queries answered wrongly: a hit on a body the segment passes more than 0.1 mm from,
//                        or a miss (ray_closest, sphere_cast: or a farther hit) where the other engine found
//                        a body the segment enters more than 0.1 mm deep
//   max_distance_error_m ray_closest, sphere_cast: the largest error in hit distance, over hits on bodies
//                        the segment really enters
// Terrain cases add build_ms (one build, wall time) and memory_bytes: Polytope's memoryBytes(); Bullet's is
// the heap growth across building the shape (glibc mallinfo2) plus the vertex and index (or sample) arrays
// it reads in place and so needs kept alive.
//
// Queries per pass: 100,000 in every case; --count N sets it. --scene NAME (repeatable) runs only the cases
// named (ray_closest, ray_any, sphere_cast, overlap_sphere, mesh_ray, heightfield_ray). --seed S picks the
// geometry and the queries. One thread for both engines. About 25 s on the 2-core development machine.
#include "bench_common.h"

#include "polytope/physics/heightfield.h"
#include "polytope/physics/triangle_mesh.h"
#include "polytope/physics/world.h"

#include <BulletCollision/CollisionShapes/btHeightfieldTerrainShape.h>
#include <btBulletCollisionCommon.h>

#include <malloc.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace polytope::bench
{
namespace
{
namespace ph = polytope::physics;

constexpr int kTimedPasses = 5;
constexpr std::int64_t kDefaultQueries = 100000; ///< per pass, every case (--count N sets it)

constexpr float kWorldCubeMeters = 100.0f;
constexpr float kRayLengthMeters = 50.0f;
constexpr float kCastRadiusMeters = 0.5f;
constexpr float kCastLengthMeters = 20.0f;
constexpr float kOverlapRadiusMeters = 2.0f;
/// Query starts closer than this to a body are drawn again, so that no query starts inside or touching one
/// (where the engines' conventions differ, not their answers).
constexpr float kStartClearanceMeters = 1e-3f;

constexpr std::uint32_t kTerrainCells = 708; // 708 x 708 cells x 2 = 1,002,528 triangles
constexpr float kTerrainCellMeters = 1.0f;
constexpr float kTerrainHeightStepMeters = 1.0f / 256.0f; // exact in float: heights are exact
constexpr float kTerrainRayStartHeightMeters = 30.0f;
constexpr float kTerrainRayLengthMeters = 60.0f;

static_assert(sizeof(ph::Vec3) == 3 * sizeof(float), "Bullet reads the mesh's Vec3 array as floats");
static_assert(sizeof(btScalar) == sizeof(float), "the single-precision Bullet build");

// ---- Geometry ---------------------------------------------------------------------------------------------

/// A ray (or a sweep of a shape's centre): origin + t * translation, t in [0, 1].
struct Segment
{
    ph::Vec3 origin{};
    ph::Vec3 translation{};
};

/// What one query found, per engine: a fraction (rays, casts) or a set of bodies (overlaps).
struct QueryAnswer
{
    bool hit = false;
    float fraction = 0.0f;
    int body = -1; ///< world cases: the body hit (its index in the scattered list)
};

float uniform(std::mt19937& rng, float lo, float hi)
{
    return std::uniform_real_distribution<float>(lo, hi)(rng);
}

ph::Vec3 randomPoint(std::mt19937& rng, float lo, float hi)
{
    const float x = uniform(rng, lo, hi);
    const float y = uniform(rng, lo, hi);
    const float z = uniform(rng, lo, hi);
    return {x, y, z};
}

/// A uniformly random unit vector (normalised Gaussian, in double, rounded to float once).
ph::Vec3 randomDirection(std::mt19937& rng)
{
    std::normal_distribution<double> g;
    for (;;)
    {
        const double x = g(rng);
        const double y = g(rng);
        const double z = g(rng);
        const double len = std::sqrt(x * x + y * y + z * z);
        if (len > 1e-6)
        {
            return {static_cast<float>(x / len), static_cast<float>(y / len), static_cast<float>(z / len)};
        }
    }
}

/// A uniformly random rotation, as randomDirection.
ph::Quat randomRotation(std::mt19937& rng)
{
    std::normal_distribution<double> g;
    for (;;)
    {
        const double x = g(rng);
        const double y = g(rng);
        const double z = g(rng);
        const double w = g(rng);
        const double len = std::sqrt(x * x + y * y + z * z + w * w);
        if (len > 1e-6)
        {
            return {static_cast<float>(x / len), static_cast<float>(y / len), static_cast<float>(z / len),
                    static_cast<float>(w / len)};
        }
    }
}

/// The scattered bodies: shape and pose, the same floats for both engines.
struct ScatteredBody
{
    ph::Shape shape{};
    ph::Transform transform{};
};

std::vector<ScatteredBody> scatterBodies(int count, std::mt19937& rng)
{
    std::vector<ScatteredBody> bodies(static_cast<std::size_t>(count));
    const float half = 0.5f * kWorldCubeMeters;
    for (ScatteredBody& b : bodies)
    {
        switch (std::uniform_int_distribution<int>(0, 2)(rng))
        {
        case 0:
            b.shape = ph::Shape::makeSphere(uniform(rng, 0.25f, 1.0f));
            break;
        case 1:
            b.shape = ph::Shape::makeBox(randomPoint(rng, 0.25f, 1.0f));
            break;
        default:
        {
            const float halfHeight = uniform(rng, 0.25f, 1.0f);
            b.shape = ph::Shape::makeCapsule(halfHeight, uniform(rng, 0.2f, 0.6f));
            break;
        }
        }
        b.transform.p = randomPoint(rng, -half, half);
        b.transform.q = randomRotation(rng);
    }
    return bodies;
}

/// The suite's cases; --scene NAME (repeatable) runs only those named.
constexpr const char* kWorldCases[] = {"ray_closest", "ray_any", "sphere_cast", "overlap_sphere"};
constexpr const char* kTerrainCases[] = {"mesh_ray", "heightfield_ray"};

bool wanted(const SuiteOptions& options, std::string_view caseName)
{
    return options.scenes.empty() ||
           std::find(options.scenes.begin(), options.scenes.end(), caseName) != options.scenes.end();
}

template <std::size_t N> bool anyWanted(const SuiteOptions& options, const char* const (&cases)[N])
{
    return std::any_of(std::begin(cases), std::end(cases), [&](const char* c) { return wanted(options, c); });
}

// ---- Timing -----------------------------------------------------------------------------------------------

struct PassTimes
{
    std::vector<double> polytope; ///< seconds per timed pass
    std::vector<double> bullet;
};

/// One untimed warm-up pass of each, then kTimedPasses timed passes, alternating so that both see the same
/// machine load.
PassTimes timePasses(const std::function<void()>& polytopePass, const std::function<void()>& bulletPass)
{
    polytopePass();
    bulletPass();
    PassTimes t;
    for (int pass = 0; pass < kTimedPasses; ++pass)
    {
        auto start = Clock::now();
        polytopePass();
        t.polytope.push_back(secondsSince(start));
        start = Clock::now();
        bulletPass();
        t.bullet.push_back(secondsSince(start));
    }
    return t;
}

double hitRatio(const std::vector<QueryAnswer>& answers)
{
    const auto hits =
        std::count_if(answers.begin(), answers.end(), [](const QueryAnswer& a) { return a.hit; });
    return answers.empty() ? 0.0 : static_cast<double>(hits) / static_cast<double>(answers.size());
}

struct Agreement
{
    double agreeRatio = 0.0;
    double maxDistanceDiffMeters = 0.0;
};

Agreement compare(const std::vector<QueryAnswer>& a, const std::vector<QueryAnswer>& b, float lengthMeters)
{
    Agreement out;
    std::size_t agree = 0;
    for (std::size_t i = 0; i < a.size(); ++i)
    {
        if (a[i].hit == b[i].hit)
        {
            ++agree;
        }
        if (a[i].hit && b[i].hit)
        {
            const double diff = std::fabs(static_cast<double>(a[i].fraction) - b[i].fraction) * lengthMeters;
            out.maxDistanceDiffMeters = std::max(out.maxDistanceDiffMeters, diff);
        }
    }
    out.agreeRatio = a.empty() ? 1.0 : static_cast<double>(agree) / static_cast<double>(a.size());
    return out;
}

using Figures = std::vector<std::pair<std::string, double>>;

/// The two records of a case: Polytope's (with `polytopeFigures`, e.g. agreement) then Bullet's.
void reportCase(Report& report, const char* caseName, std::int64_t n, std::size_t queries, PassTimes& times,
                const std::vector<QueryAnswer>& polytope, const std::vector<QueryAnswer>& bullet,
                const Figures& polytopeFigures, const Figures& bulletFigures = {})
{
    const double q = static_cast<double>(queries);
    const double polytopeRate = q / median(times.polytope);
    const double bulletRate = q / median(times.bullet);
    Record& p = report.add(caseName, "polytope", n)
                    .add("queries", q)
                    .add("queries_per_s", polytopeRate)
                    .add("hit_ratio", hitRatio(polytope))
                    .add("ratio_vs_bullet", polytopeRate / bulletRate);
    for (const auto& [name, value] : polytopeFigures)
    {
        p.add(name, value);
    }
    Record& b = report.add(caseName, "bullet", n)
                    .add("queries", q)
                    .add("queries_per_s", bulletRate)
                    .add("hit_ratio", hitRatio(bullet));
    for (const auto& [name, value] : bulletFigures)
    {
        b.add(name, value);
    }
}

// ---- Bullet worlds ----------------------------------------------------------------------------------------

btVector3 toBullet(const ph::Vec3& v)
{
    return {v.x, v.y, v.z};
}

btTransform toBullet(const ph::Transform& t)
{
    return btTransform(btQuaternion(t.q.x, t.q.y, t.q.z, t.q.w), toBullet(t.p));
}

/// A btCollisionWorld (no dynamics) with its objects; object i has user index i.
struct BulletCollisionScene
{
    btDefaultCollisionConfiguration configuration;
    btCollisionDispatcher dispatcher{&configuration};
    btDbvtBroadphase broadphase;
    btCollisionWorld world{&dispatcher, &broadphase, &configuration};
    std::vector<std::unique_ptr<btCollisionShape>> shapes;
    std::vector<std::unique_ptr<btCollisionObject>> objects;

    void add(std::unique_ptr<btCollisionShape> shape, const btTransform& transform)
    {
        auto object = std::make_unique<btCollisionObject>();
        object->setCollisionShape(shape.get());
        object->setWorldTransform(transform);
        object->setCollisionFlags(btCollisionObject::CF_STATIC_OBJECT);
        object->setUserIndex(static_cast<int>(objects.size()));
        world.addCollisionObject(object.get());
        shapes.push_back(std::move(shape));
        objects.push_back(std::move(object));
    }

    ~BulletCollisionScene()
    {
        for (auto& object : objects)
        {
            world.removeCollisionObject(object.get());
        }
    }
};

std::unique_ptr<btCollisionShape> makeBulletShape(const ph::Shape& shape)
{
    switch (shape.type)
    {
    case ph::ShapeType::Sphere:
        return std::make_unique<btSphereShape>(shape.sphere.radius);
    case ph::ShapeType::Box:
    {
        auto box = std::make_unique<btBoxShape>(toBullet(shape.box.halfExtents));
        box->setMargin(0); // keeps the outer extents; sharp corners, as Polytope's box
        return box;
    }
    case ph::ShapeType::Capsule: // btCapsuleShape's height is the core segment's length, along y
        return std::make_unique<btCapsuleShape>(shape.capsule.radius, 2.0f * shape.capsule.halfHeight);
    default: // the scattered worlds hold spheres, boxes and capsules only
        break;
    }
    return nullptr;
}

/// Stops Bullet's ray test at the first hit: a closest fraction of 0 makes btCollisionWorld skip every
/// later body (see btSingleRayCallback::process); the return value 0 clips a triangle mesh's walk.
struct AnyRayResultCallback : btCollisionWorld::RayResultCallback
{
    btScalar addSingleResult(btCollisionWorld::LocalRayResult& result, bool /*normalInWorldSpace*/) override
    {
        m_collisionObject = result.m_collisionObject;
        m_closestHitFraction = 0;
        return 0;
    }
};

/// Collects the bodies contactTest finds touching or overlapping the query object (contact distance <= 0;
/// Bullet also reports points a little apart, within its contact threshold).
struct OverlapCallback : btCollisionWorld::ContactResultCallback
{
    std::vector<int>* bodies = nullptr;

    btScalar addSingleResult(btManifoldPoint& point, const btCollisionObjectWrapper* a, int, int,
                             const btCollisionObjectWrapper* b, int, int) override
    {
        if (point.getDistance() <= 0)
        {
            const btCollisionObject* other = a->getCollisionObject()->getUserIndex() >= 0
                                                 ? a->getCollisionObject()
                                                 : b->getCollisionObject();
            const int index = other->getUserIndex();
            if (bodies->empty() || bodies->back() != index) // one object's points come together
            {
                bodies->push_back(index);
            }
        }
        return 0;
    }
};

// ---- Oracle -----------------------------------------------------------------------------------------------
// Independent of both engines, in double precision from the same float inputs: the signed distance from a
// point to a body (closed forms for spheres, capsules and boxes). Along a segment it is a convex function
// of t, so its minimum is found by ternary search, and the entry of a shape of radius r (0 for a ray) into
// the body, the first t where the distance is <= r, by bisection before the minimum. Only the bodies the
// engines reported are checked: a body that both missed is not looked for.

/// Segments passing within this of a body's surface graze it: either answer (hit or miss) is right.
constexpr double kOracleToleranceMeters = 1e-4;

enum class OracleContact : std::uint8_t
{
    Miss,  ///< the segment stays farther than the tolerance from the body
    Graze, ///< within the tolerance of touching it
    Hit,   ///< it goes deeper than the tolerance
};

struct OracleAnswer
{
    OracleContact contact = OracleContact::Miss;
    double fraction = 0.0; ///< Hit: where the shape first touches the body
};

double signedDistance(const ScatteredBody& body, const std::array<double, 3>& point)
{
    // Into the body's frame: rotate point - centre by the conjugate of the (normalised) rotation.
    const ph::Quat& q = body.transform.q;
    const double norm =
        std::sqrt(double(q.x) * q.x + double(q.y) * q.y + double(q.z) * q.z + double(q.w) * q.w);
    const double x = -q.x / norm, y = -q.y / norm, z = -q.z / norm, w = q.w / norm;
    const double v[3] = {point[0] - body.transform.p.x, point[1] - body.transform.p.y,
                         point[2] - body.transform.p.z};
    const double tx = 2.0 * (y * v[2] - z * v[1]);
    const double ty = 2.0 * (z * v[0] - x * v[2]);
    const double tz = 2.0 * (x * v[1] - y * v[0]);
    const double l[3] = {v[0] + w * tx + (y * tz - z * ty), v[1] + w * ty + (z * tx - x * tz),
                         v[2] + w * tz + (x * ty - y * tx)};
    switch (body.shape.type)
    {
    case ph::ShapeType::Sphere:
        return std::sqrt(l[0] * l[0] + l[1] * l[1] + l[2] * l[2]) - body.shape.sphere.radius;
    case ph::ShapeType::Capsule:
    {
        const double h = body.shape.capsule.halfHeight;
        const double dy = l[1] - std::clamp(l[1], -h, h);
        return std::sqrt(l[0] * l[0] + dy * dy + l[2] * l[2]) - body.shape.capsule.radius;
    }
    case ph::ShapeType::Box:
    {
        const ph::Vec3& h = body.shape.box.halfExtents;
        const double d[3] = {std::fabs(l[0]) - h.x, std::fabs(l[1]) - h.y, std::fabs(l[2]) - h.z};
        double outside = 0.0;
        for (const double e : d)
        {
            outside += e > 0.0 ? e * e : 0.0;
        }
        return outside > 0.0 ? std::sqrt(outside) : std::max({d[0], d[1], d[2]});
    }
    default: // the scattered worlds hold spheres, boxes and capsules only
        break;
    }
    return INFINITY;
}

/// How a shape of `radius` metres swept along `segment` (its centre) meets `body`.
OracleAnswer oracleCast(const ScatteredBody& body, const Segment& segment, double radius)
{
    const auto distanceAt = [&](double t)
    {
        return signedDistance(body, {segment.origin.x + t * segment.translation.x,
                                     segment.origin.y + t * segment.translation.y,
                                     segment.origin.z + t * segment.translation.z}) -
               radius;
    };
    double lo = 0.0;
    double hi = 1.0;
    for (int i = 0; i < 100; ++i)
    {
        const double a = lo + (hi - lo) / 3.0;
        const double b = hi - (hi - lo) / 3.0;
        if (distanceAt(a) < distanceAt(b))
        {
            hi = b;
        }
        else
        {
            lo = a;
        }
    }
    const double closest = 0.5 * (lo + hi);
    const double gap = std::min({distanceAt(closest), distanceAt(0.0), distanceAt(1.0)});
    if (gap > kOracleToleranceMeters)
    {
        return {OracleContact::Miss, 0.0};
    }
    if (gap > -kOracleToleranceMeters)
    {
        return {OracleContact::Graze, 0.0};
    }
    // The starts are clear of every body, so the distance falls from positive to negative before `closest`.
    lo = 0.0;
    hi = distanceAt(closest) <= 0.0 ? closest : 1.0;
    for (int i = 0; i < 64; ++i)
    {
        const double mid = 0.5 * (lo + hi);
        if (distanceAt(mid) <= 0.0)
        {
            hi = mid;
        }
        else
        {
            lo = mid;
        }
    }
    return {OracleContact::Hit, hi};
}

/// One engine's answers judged against the oracle.
struct Verdicts
{
    std::size_t wrong = 0;               ///< false hits, and misses of a nearer body the other engine found
    double maxDistanceErrorMeters = 0.0; ///< over hits on bodies the segment really enters
};

/// Judges answer `a` of one engine, given answer `b` of the other to the same query: wrong when a's body is
/// one the segment misses, or when b's body is one it enters and a missed it or (with `distances`) reports
/// a farther entry. `length` converts fractions to metres.
void judge(const std::vector<ScatteredBody>& bodies, const Segment& segment, double radius, double length,
           bool distances, const QueryAnswer& a, const QueryAnswer& b, Verdicts& verdicts)
{
    bool wrong = false;
    double entry = a.fraction;
    if (a.hit)
    {
        const OracleAnswer o = oracleCast(bodies[static_cast<std::size_t>(a.body)], segment, radius);
        wrong = o.contact == OracleContact::Miss;
        if (o.contact == OracleContact::Hit)
        {
            entry = o.fraction;
            if (distances)
            {
                verdicts.maxDistanceErrorMeters =
                    std::max(verdicts.maxDistanceErrorMeters, std::fabs(a.fraction - o.fraction) * length);
            }
        }
    }
    if (!wrong && b.hit && b.body != a.body)
    {
        const OracleAnswer o = oracleCast(bodies[static_cast<std::size_t>(b.body)], segment, radius);
        wrong = o.contact == OracleContact::Hit &&
                (!a.hit || (distances && (entry - o.fraction) * length > kOracleToleranceMeters));
    }
    verdicts.wrong += wrong ? 1 : 0;
}

/// Both engines' verdicts as record figures: wrong_ratio and (with `distances`) max_distance_error_m.
std::pair<Figures, Figures> oracleFigures(const std::vector<ScatteredBody>& bodies,
                                          const std::vector<Segment>& segments, double radius, double length,
                                          bool distances, const std::vector<QueryAnswer>& polytope,
                                          const std::vector<QueryAnswer>& bullet)
{
    Verdicts p;
    Verdicts b;
    for (std::size_t i = 0; i < segments.size(); ++i)
    {
        judge(bodies, segments[i], radius, length, distances, polytope[i], bullet[i], p);
        judge(bodies, segments[i], radius, length, distances, bullet[i], polytope[i], b);
    }
    const auto figures = [&](const Verdicts& v)
    {
        Figures f{{"wrong_ratio", static_cast<double>(v.wrong) / static_cast<double>(segments.size())}};
        if (distances)
        {
            f.emplace_back("max_distance_error_m", v.maxDistanceErrorMeters);
        }
        return f;
    };
    return {figures(p), figures(b)};
}

// ---- World cases ------------------------------------------------------------------------------------------

/// True when a small sphere at `p` touches no body: a clear start for a query.
bool clearOfBodies(const ph::World& world, const ph::Vec3& p, float radius)
{
    bool clear = true;
    const ph::QueryFilter all;
    world.overlapShape(ph::Shape::makeSphere(radius), {p, {}}, all,
                       [&](ph::BodyId)
                       {
                           clear = false;
                           return false;
                       });
    return clear;
}

std::vector<Segment> worldSegments(const ph::World& world, std::size_t count, float length, float clearance,
                                   std::mt19937& rng)
{
    std::vector<Segment> out;
    out.reserve(count);
    const float half = 0.5f * kWorldCubeMeters;
    while (out.size() < count)
    {
        const ph::Vec3 origin = randomPoint(rng, -half, half);
        const ph::Vec3 translation = randomDirection(rng) * length;
        if (clearOfBodies(world, origin, clearance))
        {
            out.push_back({origin, translation});
        }
    }
    return out;
}

void runWorldCases(Report& report, int bodyCount, const SuiteOptions& options)
{
    std::mt19937 rng(static_cast<std::uint32_t>(options.seed * 7919 + static_cast<std::uint64_t>(bodyCount)));
    const std::vector<ScatteredBody> bodies = scatterBodies(bodyCount, rng);

    ph::World world;
    BulletCollisionScene bullet;
    std::vector<int> bodyOfSlot(bodies.size(), -1); // World slot index -> index in `bodies`
    for (std::size_t i = 0; i < bodies.size(); ++i)
    {
        ph::BodyDesc desc;
        desc.type = ph::BodyType::Static;
        desc.shape = bodies[i].shape;
        desc.transform = bodies[i].transform;
        const ph::CreateBodyResult created = world.createBody(desc);
        if (created.status != ph::WorldStatus::Ok || created.id.index >= bodyOfSlot.size())
        {
            std::fprintf(stderr, "queries: createBody failed\n");
            return;
        }
        bodyOfSlot[created.id.index] = static_cast<int>(i);
        bullet.add(makeBulletShape(bodies[i].shape), toBullet(bodies[i].transform));
    }
    const auto polytopeAnswer = [&](bool found, float fraction, ph::BodyId body) -> QueryAnswer {
        return found ? QueryAnswer{true, fraction, bodyOfSlot[body.index]} : QueryAnswer{};
    };
    const auto bulletAnswer = [](const btCollisionObject* object, btScalar fraction) -> QueryAnswer {
        return object ? QueryAnswer{true, fraction, object->getUserIndex()} : QueryAnswer{};
    };
    bullet.world.updateAabbs();

    const ph::QueryFilter all;
    const auto queryCount = static_cast<std::size_t>(options.count > 0 ? options.count : kDefaultQueries);
    const std::vector<Segment> rays =
        worldSegments(world, queryCount, kRayLengthMeters, kStartClearanceMeters, rng);
    std::vector<QueryAnswer> polytopeAnswers(rays.size());
    std::vector<QueryAnswer> bulletAnswers(rays.size());

    if (wanted(options, "ray_closest"))
    {
        PassTimes times = timePasses(
            [&]
            {
                for (std::size_t i = 0; i < rays.size(); ++i)
                {
                    ph::RayQueryHit hit;
                    const bool found =
                        world.castRayClosest({rays[i].origin, rays[i].translation, 1.0f}, all, hit);
                    polytopeAnswers[i] = polytopeAnswer(found, hit.fraction, hit.body);
                }
            },
            [&]
            {
                for (std::size_t i = 0; i < rays.size(); ++i)
                {
                    const btVector3 from = toBullet(rays[i].origin);
                    const btVector3 to = toBullet(rays[i].origin + rays[i].translation);
                    btCollisionWorld::ClosestRayResultCallback callback(from, to);
                    bullet.world.rayTest(from, to, callback);
                    bulletAnswers[i] =
                        bulletAnswer(callback.m_collisionObject, callback.m_closestHitFraction);
                }
            });
        const Agreement agreement = compare(polytopeAnswers, bulletAnswers, kRayLengthMeters);
        auto [polytopeFigures, bulletFigures] =
            oracleFigures(bodies, rays, 0.0, kRayLengthMeters, true, polytopeAnswers, bulletAnswers);
        polytopeFigures.insert(polytopeFigures.begin(),
                               {{"agree_ratio", agreement.agreeRatio},
                                {"max_distance_diff_m", agreement.maxDistanceDiffMeters}});
        reportCase(report, "ray_closest", bodyCount, rays.size(), times, polytopeAnswers, bulletAnswers,
                   polytopeFigures, bulletFigures);
    }

    if (wanted(options, "ray_any"))
    {
        PassTimes times = timePasses(
            [&]
            {
                for (std::size_t i = 0; i < rays.size(); ++i)
                {
                    ph::RayQueryHit hit;
                    const bool found =
                        world.castRayAny({rays[i].origin, rays[i].translation, 1.0f}, all, hit);
                    polytopeAnswers[i] = polytopeAnswer(found, hit.fraction, hit.body);
                }
            },
            [&]
            {
                for (std::size_t i = 0; i < rays.size(); ++i)
                {
                    AnyRayResultCallback callback;
                    bullet.world.rayTest(toBullet(rays[i].origin),
                                         toBullet(rays[i].origin + rays[i].translation), callback);
                    bulletAnswers[i] = bulletAnswer(callback.m_collisionObject, 0.0f);
                }
            });
        auto [polytopeFigures, bulletFigures] =
            oracleFigures(bodies, rays, 0.0, kRayLengthMeters, false, polytopeAnswers, bulletAnswers);
        polytopeFigures.insert(
            polytopeFigures.begin(),
            {"agree_ratio", compare(polytopeAnswers, bulletAnswers, kRayLengthMeters).agreeRatio});
        reportCase(report, "ray_any", bodyCount, rays.size(), times, polytopeAnswers, bulletAnswers,
                   polytopeFigures, bulletFigures);
    }

    if (wanted(options, "sphere_cast"))
    {
        const std::vector<Segment> casts = worldSegments(world, queryCount, kCastLengthMeters,
                                                         kCastRadiusMeters + kStartClearanceMeters, rng);
        std::vector<QueryAnswer> polytopeCasts(casts.size());
        std::vector<QueryAnswer> bulletCasts(casts.size());
        const ph::Shape sphere = ph::Shape::makeSphere(kCastRadiusMeters);
        const btSphereShape bulletSphere(kCastRadiusMeters);
        PassTimes times = timePasses(
            [&]
            {
                for (std::size_t i = 0; i < casts.size(); ++i)
                {
                    ph::ShapeQueryHit hit;
                    const ph::ShapeCastInput cast{sphere, {casts[i].origin, {}}, casts[i].translation, 1.0f};
                    const bool found = world.castShapeClosest(cast, all, hit);
                    polytopeCasts[i] = polytopeAnswer(found, hit.fraction, hit.body);
                }
            },
            [&]
            {
                for (std::size_t i = 0; i < casts.size(); ++i)
                {
                    const btVector3 from = toBullet(casts[i].origin);
                    const btVector3 to = toBullet(casts[i].origin + casts[i].translation);
                    btCollisionWorld::ClosestConvexResultCallback callback(from, to);
                    bullet.world.convexSweepTest(&bulletSphere,
                                                 btTransform(btQuaternion::getIdentity(), from),
                                                 btTransform(btQuaternion::getIdentity(), to), callback, 0);
                    bulletCasts[i] =
                        bulletAnswer(callback.m_hitCollisionObject, callback.m_closestHitFraction);
                }
            });
        const Agreement agreement = compare(polytopeCasts, bulletCasts, kCastLengthMeters);
        auto [polytopeFigures, bulletFigures] = oracleFigures(
            bodies, casts, kCastRadiusMeters, kCastLengthMeters, true, polytopeCasts, bulletCasts);
        polytopeFigures.insert(polytopeFigures.begin(),
                               {{"agree_ratio", agreement.agreeRatio},
                                {"max_distance_diff_m", agreement.maxDistanceDiffMeters}});
        reportCase(report, "sphere_cast", bodyCount, casts.size(), times, polytopeCasts, bulletCasts,
                   polytopeFigures, bulletFigures);
    }

    if (wanted(options, "overlap_sphere"))
    {
        const float half = 0.5f * kWorldCubeMeters;
        std::vector<ph::Vec3> centres(queryCount);
        for (ph::Vec3& c : centres)
        {
            c = randomPoint(rng, -half, half);
        }
        // Per query, the bodies found (sorted afterwards for the comparison).
        std::vector<std::vector<int>> polytopeSets(centres.size());
        std::vector<std::vector<int>> bulletSets(centres.size());
        const ph::Shape sphere = ph::Shape::makeSphere(kOverlapRadiusMeters);
        btSphereShape bulletSphere(kOverlapRadiusMeters);
        btCollisionObject probe;
        probe.setCollisionShape(&bulletSphere);
        probe.setUserIndex(-1);
        OverlapCallback callback;
        PassTimes times = timePasses(
            [&]
            {
                for (std::size_t i = 0; i < centres.size(); ++i)
                {
                    std::vector<int>& found = polytopeSets[i];
                    found.clear();
                    world.overlapShape(sphere, {centres[i], {}}, all,
                                       [&](ph::BodyId id)
                                       {
                                           found.push_back(static_cast<int>(id.index));
                                           return true;
                                       });
                }
            },
            [&]
            {
                for (std::size_t i = 0; i < centres.size(); ++i)
                {
                    bulletSets[i].clear();
                    callback.bodies = &bulletSets[i];
                    probe.setWorldTransform(btTransform(btQuaternion::getIdentity(), toBullet(centres[i])));
                    bullet.world.contactTest(&probe, callback);
                }
            });
        std::vector<QueryAnswer> polytopeHits(centres.size());
        std::vector<QueryAnswer> bulletHits(centres.size());
        std::size_t same = 0;
        double polytopeBodies = 0.0;
        for (std::size_t i = 0; i < centres.size(); ++i)
        {
            std::sort(polytopeSets[i].begin(), polytopeSets[i].end());
            std::sort(bulletSets[i].begin(), bulletSets[i].end());
            bulletSets[i].erase(std::unique(bulletSets[i].begin(), bulletSets[i].end()), bulletSets[i].end());
            same += polytopeSets[i] == bulletSets[i] ? 1 : 0;
            polytopeHits[i].hit = !polytopeSets[i].empty();
            bulletHits[i].hit = !bulletSets[i].empty();
            polytopeBodies += static_cast<double>(polytopeSets[i].size());
        }
        reportCase(report, "overlap_sphere", bodyCount, centres.size(), times, polytopeHits, bulletHits,
                   {{"agree_ratio", static_cast<double>(same) / static_cast<double>(centres.size())},
                    {"bodies_per_query", polytopeBodies / static_cast<double>(centres.size())}});
    }
}

// ---- Terrain cases ----------------------------------------------------------------------------------------

/// Bytes in use on the heap (glibc: small blocks plus mmapped ones).
std::size_t heapBytesInUse()
{
    const struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

struct Terrain
{
    std::uint32_t samplesPerSide = kTerrainCells + 1;
    std::vector<std::uint16_t> samples; ///< row by row (iz * samplesPerSide + ix)
    std::vector<ph::Vec3> vertices;     ///< one per sample, same order
    std::vector<std::uint32_t> indices; ///< two triangles per cell, split as HeightField splits them
    float minHeight = 0.0f, maxHeight = 0.0f;
};

/// Rolling hills with 0.25 m of noise, 3 .. 13 m high, heights on a 1/256 m grid.
Terrain makeTerrain(std::mt19937& rng)
{
    Terrain t;
    const std::uint32_t side = t.samplesPerSide;
    const float phase1 = uniform(rng, 0.0f, 6.283f);
    const float phase2 = uniform(rng, 0.0f, 6.283f);
    const float phase3 = uniform(rng, 0.0f, 6.283f);
    t.samples.resize(std::size_t(side) * side);
    t.vertices.resize(t.samples.size());
    t.minHeight = 1e30f;
    t.maxHeight = -1e30f;
    for (std::uint32_t iz = 0; iz < side; ++iz)
    {
        for (std::uint32_t ix = 0; ix < side; ++ix)
        {
            const float x = static_cast<float>(ix) * kTerrainCellMeters;
            const float z = static_cast<float>(iz) * kTerrainCellMeters;
            const float h = 8.0f + 3.0f * std::sin(0.05f * x + phase1) * std::cos(0.04f * z + phase2) +
                            1.5f * std::sin(0.21f * x + 0.17f * z + phase3) + uniform(rng, -0.25f, 0.25f);
            const auto s = static_cast<std::uint16_t>(std::lround(h / kTerrainHeightStepMeters));
            const std::size_t k = std::size_t(iz) * side + ix;
            t.samples[k] = s;
            // As HeightField::vertex computes it (heightOffset 0): the same float.
            const float y = kTerrainHeightStepMeters * static_cast<float>(s);
            t.vertices[k] = {x, y, z};
            t.minHeight = std::min(t.minHeight, y);
            t.maxHeight = std::max(t.maxHeight, y);
        }
    }
    t.indices.reserve(std::size_t(kTerrainCells) * kTerrainCells * 6);
    for (std::uint32_t cz = 0; cz < kTerrainCells; ++cz)
    {
        for (std::uint32_t cx = 0; cx < kTerrainCells; ++cx)
        {
            const std::uint32_t p00 = cz * side + cx;
            const std::uint32_t p10 = p00 + 1;
            const std::uint32_t p01 = p00 + side;
            const std::uint32_t p11 = p01 + 1;
            // heightfield.h: triangle 0 = (p00, p01, p11), triangle 1 = (p11, p10, p00).
            t.indices.insert(t.indices.end(), {p00, p01, p11, p11, p10, p00});
        }
    }
    return t;
}

std::vector<Segment> terrainRays(std::size_t count, std::mt19937& rng)
{
    std::vector<Segment> out(count);
    const float far = static_cast<float>(kTerrainCells) * kTerrainCellMeters - 10.0f;
    for (Segment& s : out)
    {
        const float x = uniform(rng, 10.0f, far);
        const float z = uniform(rng, 10.0f, far);
        const float dx = uniform(rng, -0.5f, 0.5f);
        const float dz = uniform(rng, -0.5f, 0.5f);
        s.origin = {x, kTerrainRayStartHeightMeters, z};
        s.translation = normalize(ph::Vec3{dx, -1.0f, dz}) * kTerrainRayLengthMeters;
    }
    return out;
}

/// Bullet's side of a terrain case: rayTest against one static object holding the terrain shape.
void bulletTerrainRays(const BulletCollisionScene& scene, const std::vector<Segment>& rays,
                       std::vector<QueryAnswer>& answers)
{
    for (std::size_t i = 0; i < rays.size(); ++i)
    {
        const btVector3 from = toBullet(rays[i].origin);
        const btVector3 to = toBullet(rays[i].origin + rays[i].translation);
        btCollisionWorld::ClosestRayResultCallback callback(from, to);
        scene.world.rayTest(from, to, callback);
        answers[i] = {callback.hasHit(), callback.m_closestHitFraction, -1};
    }
}

void runTerrainCases(Report& report, const SuiteOptions& options)
{
    std::mt19937 rng(static_cast<std::uint32_t>(options.seed * 104729));
    Terrain terrain = makeTerrain(rng);
    const auto queryCount = static_cast<std::size_t>(options.count > 0 ? options.count : kDefaultQueries);
    const std::vector<Segment> rays = terrainRays(queryCount, rng);
    std::vector<QueryAnswer> polytopeAnswers(rays.size());
    std::vector<QueryAnswer> bulletAnswers(rays.size());
    const auto triangleCount = static_cast<std::int64_t>(terrain.indices.size() / 3);

    if (wanted(options, "mesh_ray"))
    {
        auto start = Clock::now();
        ph::TriangleMeshBuildResult built = ph::buildTriangleMesh(terrain.vertices, terrain.indices);
        const double polytopeBuildMs = secondsSince(start) * 1e3;
        if (!built.ok())
        {
            std::fprintf(stderr, "queries: buildTriangleMesh failed: %s\n", built.message.c_str());
            return;
        }
        const ph::TriangleMesh& mesh = built.mesh;

        // btTriangleIndexVertexArray reads the arrays in place (int indices: the same bits as uint32 here,
        // every index being below 2^31). Declared before the scene, whose shape refers to it.
        btTriangleIndexVertexArray meshInterface(
            static_cast<int>(triangleCount), reinterpret_cast<int*>(terrain.indices.data()), 3 * sizeof(int),
            static_cast<int>(terrain.vertices.size()), reinterpret_cast<btScalar*>(terrain.vertices.data()),
            sizeof(ph::Vec3));
        BulletCollisionScene scene;
        const std::size_t heapBefore = heapBytesInUse();
        start = Clock::now();
        auto shape = std::make_unique<btBvhTriangleMeshShape>(&meshInterface, true /*quantized*/, true);
        const double bulletBuildMs = secondsSince(start) * 1e3;
        const std::size_t bulletHeap = heapBytesInUse() - heapBefore;
        scene.add(std::move(shape), btTransform::getIdentity());
        scene.world.updateAabbs();

        PassTimes times = timePasses(
            [&]
            {
                for (std::size_t i = 0; i < rays.size(); ++i)
                {
                    ph::MeshRayCastHit hit;
                    const bool found = mesh.castRay({rays[i].origin, rays[i].translation, 1.0f},
                                                    ph::MeshRayMode::Closest, hit);
                    polytopeAnswers[i] = {found, found ? hit.hit.fraction : 0.0f, -1};
                }
            },
            [&] { bulletTerrainRays(scene, rays, bulletAnswers); });
        const Agreement agreement = compare(polytopeAnswers, bulletAnswers, kTerrainRayLengthMeters);
        const std::size_t sharedArrays =
            terrain.vertices.size() * sizeof(ph::Vec3) + terrain.indices.size() * sizeof(std::uint32_t);
        reportCase(
            report, "mesh_ray", triangleCount, rays.size(), times, polytopeAnswers, bulletAnswers,
            {{"agree_ratio", agreement.agreeRatio},
             {"max_distance_diff_m", agreement.maxDistanceDiffMeters},
             {"build_ms", polytopeBuildMs},
             {"memory_bytes", static_cast<double>(mesh.memoryBytes())}},
            {{"build_ms", bulletBuildMs}, {"memory_bytes", static_cast<double>(bulletHeap + sharedArrays)}});
    }

    if (wanted(options, "heightfield_ray"))
    {
        ph::HeightFieldDesc desc;
        desc.sampleCountX = terrain.samplesPerSide;
        desc.sampleCountZ = terrain.samplesPerSide;
        desc.cellSizeX = kTerrainCellMeters;
        desc.cellSizeZ = kTerrainCellMeters;
        desc.samples = terrain.samples;
        desc.heightScale = kTerrainHeightStepMeters;
        desc.heightOffset = 0.0f;
        auto start = Clock::now();
        ph::HeightFieldBuildResult built = ph::buildHeightField(desc);
        const double polytopeBuildMs = secondsSince(start) * 1e3;
        if (!built.ok())
        {
            std::fprintf(stderr, "queries: buildHeightField failed: %s\n", built.message.c_str());
            return;
        }
        const ph::HeightField& field = built.heightField;

        // Bullet reads 16-bit signed samples in place; ours are below 2^15.
        std::vector<short> bulletSamples(terrain.samples.begin(), terrain.samples.end());
        BulletCollisionScene scene;
        const std::size_t heapBefore = heapBytesInUse();
        start = Clock::now();
        const int side = static_cast<int>(terrain.samplesPerSide);
        auto shape = std::make_unique<btHeightfieldTerrainShape>(
            side, side, bulletSamples.data(), kTerrainHeightStepMeters, terrain.minHeight, terrain.maxHeight,
            1, true /*flipQuadEdges*/);
        shape->buildAccelerator();
        const double bulletBuildMs = secondsSince(start) * 1e3;
        const std::size_t bulletHeap = heapBytesInUse() - heapBefore;
        // Bullet centres the field on its box: local x and z run from -extent/2, y is re-centred on the
        // middle of [minHeight, maxHeight]. The transform puts it back where Polytope's is (every term
        // exact).
        const float halfExtent = 0.5f * static_cast<float>(kTerrainCells) * kTerrainCellMeters;
        const btTransform placement(
            btQuaternion::getIdentity(),
            btVector3(halfExtent, 0.5f * (terrain.minHeight + terrain.maxHeight), halfExtent));
        scene.add(std::move(shape), placement);
        scene.world.updateAabbs();

        PassTimes times = timePasses(
            [&]
            {
                for (std::size_t i = 0; i < rays.size(); ++i)
                {
                    ph::HeightFieldRayHit hit;
                    const bool found = field.castRay({rays[i].origin, rays[i].translation, 1.0f},
                                                     ph::HeightFieldRayMode::Closest, hit);
                    polytopeAnswers[i] = {found, found ? hit.hit.fraction : 0.0f, -1};
                }
            },
            [&] { bulletTerrainRays(scene, rays, bulletAnswers); });
        const Agreement agreement = compare(polytopeAnswers, bulletAnswers, kTerrainRayLengthMeters);
        reportCase(
            report, "heightfield_ray", triangleCount, rays.size(), times, polytopeAnswers, bulletAnswers,
            {{"agree_ratio", agreement.agreeRatio},
             {"max_distance_diff_m", agreement.maxDistanceDiffMeters},
             {"build_ms", polytopeBuildMs},
             {"memory_bytes", static_cast<double>(field.memoryBytes())}},
            {{"build_ms", bulletBuildMs},
             {"memory_bytes", static_cast<double>(bulletHeap + bulletSamples.size() * sizeof(short))}});
    }
}

} // namespace

void runQueriesSuite(Report& report, const SuiteOptions& options)
{
    for (const std::string& name : options.scenes)
    {
        const auto named = [&](const char* c) { return name == c; };
        if (std::none_of(std::begin(kWorldCases), std::end(kWorldCases), named) &&
            std::none_of(std::begin(kTerrainCases), std::end(kTerrainCases), named))
        {
            std::fprintf(stderr, "polytope-bench queries: no case '%s' in this suite\n", name.c_str());
        }
    }
    if (anyWanted(options, kWorldCases))
    {
        for (const int bodyCount : {1000, 10000})
        {
            runWorldCases(report, bodyCount, options);
        }
    }
    if (anyWanted(options, kTerrainCases))
    {
        runTerrainCases(report, options);
    }
}

} // namespace polytope::bench
