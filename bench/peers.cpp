#include "peers.h"

#include <BulletCollision/CollisionShapes/btBoxShape.h>
#include <BulletCollision/CollisionShapes/btConvexHullShape.h>
#include <BulletCollision/NarrowPhaseCollision/btGjkEpa2.h>
#include <ccd/ccd.h>
#include <ccd/quat.h>
#include <ccd/vec3.h>

#include <cmath>
#include <vector>

namespace polytope::bench
{
namespace
{

/// One side of a pair as libccd sees it: world-space vertices (double) and centre.
struct CcdObject
{
    bool isBox = false;
    ccd_vec3_t halfExtents; ///< boxes
    ccd_quat_t rotation, inverseRotation;
    std::vector<ccd_vec3_t> vertices; ///< hulls: world space
    ccd_vec3_t center;
};

void ccdSupport(const void* object, const ccd_vec3_t* dir, ccd_vec3_t* out)
{
    const auto* o = static_cast<const CcdObject*>(object);
    if (o->isBox)
    {
        // As libccd's own box support does: direction into the box frame, pick the corner, back out.
        ccd_vec3_t local;
        ccdVec3Copy(&local, dir);
        ccdQuatRotVec(&local, &o->inverseRotation);
        auto pick = [](ccd_real_t d, ccd_real_t h) { return d >= 0 ? h : -h; };
        ccdVec3Set(out, pick(ccdVec3X(&local), ccdVec3X(&o->halfExtents)),
                   pick(ccdVec3Y(&local), ccdVec3Y(&o->halfExtents)),
                   pick(ccdVec3Z(&local), ccdVec3Z(&o->halfExtents)));
        ccdQuatRotVec(out, &o->rotation);
        ccdVec3Add(out, &o->center);
        return;
    }
    double best = -1e300;
    for (const ccd_vec3_t& v : o->vertices)
    {
        const double d = ccdVec3Dot(&v, dir);
        if (d > best)
        {
            best = d;
            ccdVec3Copy(out, &v);
        }
    }
}

void ccdCenter(const void* object, ccd_vec3_t* center)
{
    ccdVec3Copy(center, &static_cast<const CcdObject*>(object)->center);
}

CcdObject makeCcdObject(const ConvexShapeData& shape, const Float3& position, const Float4& rotation)
{
    CcdObject o;
    o.isBox = shape.isBox;
    ccdVec3Set(&o.halfExtents, shape.halfExtents.x, shape.halfExtents.y, shape.halfExtents.z);
    ccdQuatSet(&o.rotation, rotation.x, rotation.y, rotation.z, rotation.w);
    ccdQuatInvert2(&o.inverseRotation, &o.rotation);
    for (const Vec3d& v : worldVertices(shape, position, rotation))
    {
        ccd_vec3_t c;
        ccdVec3Set(&c, v[0], v[1], v[2]);
        o.vertices.push_back(c);
    }
    ccdVec3Set(&o.center, position.x, position.y, position.z);
    return o;
}

btTransform toBullet(const Float3& p, const Float4& q)
{
    return btTransform(btQuaternion(q.x, q.y, q.z, q.w), btVector3(p.x, p.y, p.z));
}

std::unique_ptr<btConvexShape> makeBulletShape(const ConvexShapeData& shape)
{
    if (shape.isBox)
    {
        auto box = std::make_unique<btBoxShape>(
            btVector3(shape.halfExtents.x, shape.halfExtents.y, shape.halfExtents.z));
        box->setMargin(0);
        return box;
    }
    auto hull = std::make_unique<btConvexHullShape>();
    for (const Float3& p : shape.points)
    {
        hull->addPoint(btVector3(p.x, p.y, p.z), false);
    }
    hull->recalcLocalAabb();
    hull->setMargin(0);
    return hull;
}

} // namespace

struct CcdPeer::Impl
{
    CcdObject a, b;
    ccd_t ccd;
};

CcdPeer::CcdPeer(const ConvexPair& pair) : m_impl(std::make_unique<Impl>())
{
    m_impl->a = makeCcdObject(pair.a, pair.positionA, pair.rotationA);
    m_impl->b = makeCcdObject(pair.b, pair.positionB, pair.rotationB);
    CCD_INIT(&m_impl->ccd);
    m_impl->ccd.support1 = ccdSupport;
    m_impl->ccd.support2 = ccdSupport;
    m_impl->ccd.center1 = ccdCenter;
    m_impl->ccd.center2 = ccdCenter;
    m_impl->ccd.max_iterations = 1000;
}
CcdPeer::~CcdPeer() = default;

bool CcdPeer::gjkIntersect() const
{
    return ccdGJKIntersect(&m_impl->a, &m_impl->b, &m_impl->ccd) != 0;
}
bool CcdPeer::mprIntersect() const
{
    return ccdMPRIntersect(&m_impl->a, &m_impl->b, &m_impl->ccd) != 0;
}

PeerResult CcdPeer::gjkPenetration() const
{
    PeerResult r;
    ccd_real_t depth = 0;
    ccd_vec3_t dir, pos;
    const int rc = ccdGJKPenetration(&m_impl->a, &m_impl->b, &m_impl->ccd, &depth, &dir, &pos);
    r.ok = rc == 0;
    r.overlapping = rc == 0;
    r.depth = depth;
    return r;
}

PeerResult CcdPeer::mprPenetration() const
{
    PeerResult r;
    ccd_real_t depth = 0;
    ccd_vec3_t dir, pos;
    const int rc = ccdMPRPenetration(&m_impl->a, &m_impl->b, &m_impl->ccd, &depth, &dir, &pos);
    r.ok = rc == 0;
    r.overlapping = rc == 0;
    r.depth = depth;
    return r;
}

struct BulletPeer::Impl
{
    std::unique_ptr<btConvexShape> a, b;
    btTransform xfA, xfB;
};

BulletPeer::BulletPeer(const ConvexPair& pair) : m_impl(std::make_unique<Impl>())
{
    m_impl->a = makeBulletShape(pair.a);
    m_impl->b = makeBulletShape(pair.b);
    m_impl->xfA = toBullet(pair.positionA, pair.rotationA);
    m_impl->xfB = toBullet(pair.positionB, pair.rotationB);
}
BulletPeer::~BulletPeer() = default;

PeerResult BulletPeer::distance() const
{
    btGjkEpaSolver2::sResults results;
    const btVector3 guess = m_impl->xfB.getOrigin() - m_impl->xfA.getOrigin();
    PeerResult r;
    const bool apart =
        btGjkEpaSolver2::Distance(m_impl->a.get(), m_impl->xfA, m_impl->b.get(), m_impl->xfB, guess, results);
    r.ok = true;
    r.overlapping = !apart;
    r.distance = apart ? results.distance : 0.0;
    return r;
}

PeerResult BulletPeer::penetration() const
{
    btGjkEpaSolver2::sResults results;
    const btVector3 guess = m_impl->xfB.getOrigin() - m_impl->xfA.getOrigin();
    PeerResult r;
    const bool hit = btGjkEpaSolver2::Penetration(m_impl->a.get(), m_impl->xfA, m_impl->b.get(), m_impl->xfB,
                                                  guess, results);
    r.ok = results.status == btGjkEpaSolver2::sResults::Penetrating ||
           results.status == btGjkEpaSolver2::sResults::Separated;
    r.overlapping = hit;
    r.depth = hit ? -results.distance : 0.0;
    r.distance = hit ? 0.0 : results.distance;
    return r;
}

} // namespace polytope::bench
