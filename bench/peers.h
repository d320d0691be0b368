// polytope-bench: the peers, libccd 2.1 and Bullet 3.24 (Debian packages), behind one small interface so
// the suite can time and check them exactly like Polytope. Linked into bench/ only.
#pragma once

#include "narrowphase_cases.h"

#include <memory>

namespace polytope::bench
{

/// What a penetration or distance query returned, in world space.
struct PeerResult
{
    bool ok = false; ///< the call reported success
    bool overlapping = false;
    double depth = 0.0;    ///< metres, when overlapping
    double distance = 0.0; ///< metres, when apart
};

/// libccd: support functions on the pair's float data (libccd computes in double). max_iterations is
/// capped at 1000 (its default is unbounded, and ccdGJKPenetration was seen to hang on some pairs);
/// tolerances are libccd's defaults (EPA/MPR 1e-4, distance 1e-6).
class CcdPeer
{
  public:
    explicit CcdPeer(const ConvexPair& pair);
    ~CcdPeer();
    bool gjkIntersect() const;
    bool mprIntersect() const;
    PeerResult gjkPenetration() const;
    PeerResult mprPenetration() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

/// Bullet: btBoxShape / btConvexHullShape with margin 0 (exact geometry) and btGjkEpaSolver2.
class BulletPeer
{
  public:
    explicit BulletPeer(const ConvexPair& pair);
    ~BulletPeer();
    /// btGjkEpaSolver2::Distance: false when the shapes overlap.
    PeerResult distance() const;
    /// btGjkEpaSolver2::Penetration.
    PeerResult penetration() const;

  private:
    struct Impl;
    std::unique_ptr<Impl> m_impl;
};

} // namespace polytope::bench
