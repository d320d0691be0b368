// Polytope physics: convex hulls from point clouds (quickhull), and the exact box hull.
//
// Method (Barber, Dobkin & Huhdanpaa 1996, "The Quickhull Algorithm for Convex Hulls"; the fat-plane
// treatment follows Gregorius, "Implementing Quickhull", GDC 2014):
//  1. Normalise the cloud (centre of its bounding box to the origin, largest side to 1) in double, so
//     one tolerance `tol` serves clouds of any size and position. Refuse flat, collinear and
//     coincident clouds while choosing the initial tetrahedron from extreme points.
//  2. Grow a triangle mesh. Each triangle keeps the points above it by more than tol (its conflict
//     list); the farthest such point over all triangles is added next. The region replaced by the new
//     point's cone is every triangle reachable from the starting one that the point is above *or
//     within tol of*. Counting near-coplanar triangles as replaced is what keeps the cone free of
//     degenerate triangles: the triangles left across the horizon have the point more than tol below
//     them, so it is more than tol away from every horizon edge. If tolerance ever makes the replaced
//     region other than a disk, stray islands of kept triangles are absorbed so that the horizon is
//     one loop.
//  3. Merge triangles into polygon faces: seeded from the largest triangle, a face grows over
//     neighbours whose three vertices lie within tol of the seed's plane; then neighbouring faces whose
//     union is still flat within tol are merged (the fitted plane can differ from the seed's). A vertex
//     that touches only one or two faces lies inside a face or on an edge line and is dropped from the
//     loops (a safety net: step 2 already replaces such vertices, and the tests never reach it).
//  4. Fit each face's normal by Newell's method and set its offset to the largest dot(normal, vertex)
//     over all hull vertices (so the plane supports the vertex set), then check everything the header
//     promises. Tolerance decisions can leave the triangle mesh slightly non-convex (a sliver
//     triangle's plane tilts by tol / its short side, amplified over the hull's size); if a check
//     fails, start again with a 4x larger tolerance, which absorbs the offending points (twice at most;
//     seen once in a million-point cloud, never in the tests' random clouds).
// Double precision is used because plane tests of float points differ by far less than float's ulp on
// nearly coplanar input; in double they are accurate to ~1e-16 of the cloud's size, far below tol.
#include "polytope/physics/hull.h"

#include "polytope/physics/dvec3.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <cstddef>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace polytope::physics
{
namespace
{

constexpr int kNone = -1;
/// A cloud whose intermediate hull grows past this is refused without finishing: it all but surely has
/// more than kMaxHullVertices vertices, and refusing early bounds the work on huge inputs.
constexpr std::size_t kMaxIntermediateVertices = 8 * kMaxHullVertices;
constexpr int kAttempts = 3;
constexpr double kToleranceGrowth = 4.0;

/// One triangle of the growing mesh. adj[i] is the triangle across the edge v[i] -> v[(i + 1) % 3].
struct Triangle
{
    std::array<int, 3> v{};
    std::array<int, 3> adj{kNone, kNone, kNone};
    DVec3 normal{};
    double offset = 0.0;
    double area = 0.0;
    int conflictHead = kNone; ///< first outside point; the rest follow through nextConflict
    int farthestPoint = kNone;
    double farthestDistance = 0.0;
    int visitStamp = 0;
    bool alive = true;
};

struct HorizonEdge
{
    int triangle = kNone; ///< the replaced triangle that owns the edge
    int edge = 0;
    int from = 0;
    int to = 0;
};

enum class Outcome
{
    Done,
    Failed, ///< numerical trouble: retry with a larger tolerance
    TooManyVertices,
};

/// The polygon faces found by the triangle stage, in input point indices.
struct FaceSet
{
    std::vector<int> loopStart;    ///< per face, into loopVertices; loopStart.back() is the total
    std::vector<int> loopVertices; ///< concatenated counter-clockwise loops
    std::vector<int> loopNeighbor; ///< per loop side (from loopVertices[k] to the next): the face across
    std::vector<DVec3> normals;    ///< per face, unit, outward (Newell fit)

    int faceCount() const { return static_cast<int>(normals.size()); }
};

int next3(int i)
{
    return i == 2 ? 0 : i + 1;
}

/// The triangle mesh stage (steps 2 and 3 of the rationale), on normalised points.
class HullBuilder
{
  public:
    HullBuilder(const std::vector<DVec3>& points, double tolerance) : m_points(points), m_tol(tolerance)
    {
        // Room for typical growth, so that the stages below rarely allocate.
        const std::size_t expectedVertices = std::min(points.size(), kMaxIntermediateVertices);
        const std::size_t expectedTriangles = 2 * expectedVertices + 8;
        m_tris.reserve(4 * expectedTriangles);
        for (std::vector<int>* v : {&m_alive, &m_visible, &m_stack, &m_newTris, &m_order, &m_queue,
                                    &m_boundaryVertex, &m_boundaryNeighbor})
        {
            v->reserve(3 * expectedTriangles);
        }
        m_horizon.reserve(expectedTriangles);
        m_orderedHorizon.reserve(expectedTriangles);
        m_clusterNormals.reserve(expectedTriangles);
    }

    Outcome build(const std::array<int, 4>& simplex)
    {
        if (!makeTetrahedron(simplex))
        {
            return Outcome::Failed;
        }
        m_alive = {0, 1, 2, 3};
        for (;;)
        {
            int start = kNone;
            double farthest = 0.0;
            for (int t : m_alive)
            {
                const Triangle& tri = m_tris[t];
                if (tri.conflictHead != kNone && tri.farthestDistance > farthest)
                {
                    farthest = tri.farthestDistance;
                    start = t;
                }
            }
            if (start == kNone)
            {
                return Outcome::Done;
            }
            if (!addPoint(m_tris[start].farthestPoint, start))
            {
                return Outcome::Failed;
            }
            std::erase_if(m_alive, [this](int t) { return !m_tris[t].alive; });
            m_alive.insert(m_alive.end(), m_newTris.begin(), m_newTris.end());
            // A closed triangulated sphere has 2V - 4 faces.
            if ((m_alive.size() + 4) / 2 > kMaxIntermediateVertices)
            {
                return Outcome::TooManyVertices;
            }
        }
    }

    /// Groups the finished triangles into planar polygon faces. False on numerical trouble.
    bool extractFaces(FaceSet& faces)
    {
        std::vector<char> noMerge(m_tris.size(), 0);
        for (int round = 0; round < 8; ++round)
        {
            cluster(noMerge);
            const int bad = traceLoops();
            if (bad != kNone)
            {
                // Not a disk (never seen in testing): keep that face's triangles apart and regroup.
                for (std::size_t t = 0; t < m_tris.size(); ++t)
                {
                    noMerge[t] = noMerge[t] || m_clusterOf[t] == bad;
                }
                continue;
            }
            // Seeded growth can leave two neighbouring faces whose union is still flat within tol
            // (each grew from its own seed plane). Merge such pairs until none is left.
            for (int merges = 0; merges <= m_clusterCount; ++merges)
            {
                if (!finishFaces(faces))
                {
                    return false;
                }
                const auto [keep, absorb] = findCoplanarNeighbours(faces);
                if (keep == kNone)
                {
                    return true;
                }
                for (int& c : m_clusterOf)
                {
                    c = c == absorb ? keep : c;
                }
                if (traceLoops() != kNone)
                {
                    return false;
                }
            }
            return false;
        }
        return false;
    }

  private:
    double distance(int tri, int point) const
    {
        return dot(m_tris[tri].normal, m_points[point]) - m_tris[tri].offset;
    }

    bool setPlane(Triangle& tri) const
    {
        const DVec3& a = m_points[tri.v[0]];
        const DVec3& b = m_points[tri.v[1]];
        const DVec3& c = m_points[tri.v[2]];
        const DVec3 n = cross(b - a, c - a);
        const double len = length(n);
        if (!(len > 0.0) || !std::isfinite(len))
        {
            return false;
        }
        tri.normal = n * (1.0 / len);
        tri.offset = dot(tri.normal, (a + b + c) * (1.0 / 3.0));
        tri.area = 0.5 * len;
        return true;
    }

    void addConflict(int tri, int point, double dist)
    {
        Triangle& t = m_tris[tri];
        m_nextConflict[point] = t.conflictHead;
        t.conflictHead = point;
        if (dist > t.farthestDistance)
        {
            t.farthestDistance = dist;
            t.farthestPoint = point;
        }
    }

    /// Gives `point` to the triangle among `candidates` it is farthest above, if more than tol above.
    void assignPoint(int point, std::span<const int> candidates)
    {
        int best = kNone;
        double bestDist = m_tol;
        for (int t : candidates)
        {
            const double d = distance(t, point);
            if (d > bestDist)
            {
                bestDist = d;
                best = t;
            }
        }
        if (best != kNone)
        {
            addConflict(best, point, bestDist);
        }
    }

    bool makeTetrahedron(const std::array<int, 4>& s)
    {
        // s[3] lies below the plane of (s[0], s[1], s[2]) as oriented here.
        const std::array<std::array<int, 3>, 4> faces{
            {{s[0], s[1], s[2]}, {s[0], s[3], s[1]}, {s[1], s[3], s[2]}, {s[2], s[3], s[0]}}};
        m_tris.clear();
        for (const auto& f : faces)
        {
            Triangle tri;
            tri.v = f;
            if (!setPlane(tri))
            {
                return false;
            }
            m_tris.push_back(tri);
        }
        for (int t = 0; t < 4; ++t)
        {
            for (int i = 0; i < 3; ++i)
            {
                const int a = m_tris[t].v[i], b = m_tris[t].v[next3(i)];
                for (int u = 0; u < 4; ++u)
                {
                    for (int j = 0; j < 3; ++j)
                    {
                        if (m_tris[u].v[j] == b && m_tris[u].v[next3(j)] == a)
                        {
                            m_tris[t].adj[i] = u;
                        }
                    }
                }
            }
        }
        m_interior = (m_points[s[0]] + m_points[s[1]] + m_points[s[2]] + m_points[s[3]]) * 0.25;
        for (int t = 0; t < 4; ++t)
        {
            if (!(dot(m_tris[t].normal, m_interior) - m_tris[t].offset < 0.0))
            {
                return false;
            }
        }
        m_nextConflict.assign(m_points.size(), kNone);
        m_horizonFrom.assign(m_points.size(), kNone);
        const std::array<int, 4> all{0, 1, 2, 3};
        for (int p = 0; p < static_cast<int>(m_points.size()); ++p)
        {
            if (p != s[0] && p != s[1] && p != s[2] && p != s[3])
            {
                assignPoint(p, all);
            }
        }
        return true;
    }

    /// Collects the horizon of the marked region into m_horizon, in loop order. False unless the
    /// boundary is a single simple loop.
    bool traceHorizon()
    {
        m_horizon.clear();
        for (int t : m_visible)
        {
            for (int i = 0; i < 3; ++i)
            {
                if (m_tris[m_tris[t].adj[i]].visitStamp != m_stamp)
                {
                    m_horizon.push_back({t, i, m_tris[t].v[i], m_tris[t].v[next3(i)]});
                }
            }
        }
        bool simple = m_horizon.size() >= 3;
        for (int h = 0; h < static_cast<int>(m_horizon.size()); ++h)
        {
            int& slot = m_horizonFrom[m_horizon[h].from];
            simple = simple && slot == kNone;
            slot = h;
        }
        if (simple)
        {
            m_orderedHorizon.clear();
            int h = 0;
            do
            {
                m_orderedHorizon.push_back(m_horizon[h]);
                h = m_horizonFrom[m_horizon[h].to];
            } while (h != kNone && h != 0 && m_orderedHorizon.size() <= m_horizon.size());
            simple = h == 0 && m_orderedHorizon.size() == m_horizon.size();
        }
        for (const HorizonEdge& e : m_horizon)
        {
            m_horizonFrom[e.from] = kNone;
        }
        return simple;
    }

    /// Makes the kept (unmarked) triangles one edge-connected piece: keeps the piece holding the triangle
    /// the eye is farthest below and marks the rest for replacement. With both the replaced and the kept
    /// regions edge-connected, the horizon between them is one simple loop.
    bool absorbIslands(int eye)
    {
        int keepComponent = kNone;
        double lowest = std::numeric_limits<double>::infinity();
        std::vector<int> componentOf(m_tris.size(), kNone);
        int componentCount = 0;
        std::vector<int> stack;
        for (int t = 0; t < static_cast<int>(m_tris.size()); ++t)
        {
            if (!m_tris[t].alive || m_tris[t].visitStamp == m_stamp || componentOf[t] != kNone)
            {
                continue;
            }
            const int component = componentCount++;
            componentOf[t] = component;
            stack.assign(1, t);
            while (!stack.empty())
            {
                const int u = stack.back();
                stack.pop_back();
                const double d = distance(u, eye);
                if (d < lowest)
                {
                    lowest = d;
                    keepComponent = component;
                }
                for (int n : m_tris[u].adj)
                {
                    if (m_tris[n].visitStamp != m_stamp && componentOf[n] == kNone)
                    {
                        componentOf[n] = component;
                        stack.push_back(n);
                    }
                }
            }
        }
        if (keepComponent == kNone)
        {
            return false;
        }
        for (int t = 0; t < static_cast<int>(m_tris.size()); ++t)
        {
            if (componentOf[t] != kNone && componentOf[t] != keepComponent)
            {
                m_tris[t].visitStamp = m_stamp;
                m_visible.push_back(t);
            }
        }
        return true;
    }

    bool addPoint(int eye, int start)
    {
        // The region to replace: everything reachable that the eye is above or within tol of.
        ++m_stamp;
        m_visible.clear();
        m_stack.assign(1, start);
        m_tris[start].visitStamp = m_stamp;
        while (!m_stack.empty())
        {
            const int t = m_stack.back();
            m_stack.pop_back();
            m_visible.push_back(t);
            for (int n : m_tris[t].adj)
            {
                if (m_tris[n].visitStamp != m_stamp && distance(n, eye) > -m_tol)
                {
                    m_tris[n].visitStamp = m_stamp;
                    m_stack.push_back(n);
                }
            }
        }
        if (!traceHorizon())
        {
            if (!absorbIslands(eye) || !traceHorizon())
            {
                return false;
            }
        }

        // The cone from the eye over the horizon; triangle k is (from_k, to_k, eye).
        const int first = static_cast<int>(m_tris.size());
        const int count = static_cast<int>(m_orderedHorizon.size());
        m_newTris.clear();
        for (int k = 0; k < count; ++k)
        {
            const HorizonEdge& e = m_orderedHorizon[k];
            Triangle tri;
            tri.v = {e.from, e.to, eye};
            const int outside = m_tris[e.triangle].adj[e.edge];
            tri.adj = {outside, first + (k + 1) % count, first + (k + count - 1) % count};
            if (!setPlane(tri) || !(dot(tri.normal, m_interior) - tri.offset < 0.0))
            {
                return false;
            }
            Triangle& o = m_tris[outside];
            for (int j = 0; j < 3; ++j)
            {
                if (o.adj[j] == e.triangle && o.v[j] == e.to)
                {
                    o.adj[j] = first + k;
                }
            }
            m_tris.push_back(tri);
            m_newTris.push_back(first + k);
        }

        // Hand the replaced triangles' outside points to the cone; retire the replaced triangles.
        for (int t : m_visible)
        {
            int p = m_tris[t].conflictHead;
            while (p != kNone)
            {
                const int nextPoint = m_nextConflict[p];
                if (p != eye)
                {
                    assignPoint(p, m_newTris);
                }
                p = nextPoint;
            }
            m_tris[t].alive = false;
            m_tris[t].conflictHead = kNone;
        }
        return true;
    }

    /// Groups the triangles into clusters (faces to be): from the largest unassigned triangle, a
    /// cluster grows over neighbours whose vertices all lie within tol of the seed's plane.
    void cluster(const std::vector<char>& noMerge)
    {
        m_order = m_alive;
        std::sort(m_order.begin(), m_order.end(),
                  [this](int a, int b)
                  { return m_tris[a].area != m_tris[b].area ? m_tris[a].area > m_tris[b].area : a < b; });
        m_clusterOf.assign(m_tris.size(), kNone);
        m_clusterNormals.clear();
        m_clusterCount = 0;
        for (int seed : m_order)
        {
            if (m_clusterOf[seed] != kNone)
            {
                continue;
            }
            const int c = m_clusterCount++;
            const DVec3 n = m_tris[seed].normal;
            const double d = m_tris[seed].offset;
            m_clusterOf[seed] = c;
            m_clusterNormals.push_back(n);
            m_queue.assign(1, seed);
            for (std::size_t q = 0; q < m_queue.size() && !noMerge[seed]; ++q)
            {
                for (int u : m_tris[m_queue[q]].adj)
                {
                    if (m_clusterOf[u] != kNone || noMerge[u] || !(dot(m_tris[u].normal, n) > 0.0))
                    {
                        continue;
                    }
                    bool flat = true;
                    for (int v : m_tris[u].v)
                    {
                        flat = flat && std::fabs(dot(n, m_points[v]) - d) <= m_tol;
                    }
                    if (flat)
                    {
                        m_clusterOf[u] = c;
                        m_queue.push_back(u);
                    }
                }
            }
        }
    }

    /// Traces each cluster's boundary loop, walking boundary edges and turning about each vertex
    /// through the cluster's interior, recording for each side the cluster across it. Returns kNone on
    /// success, or a cluster whose triangles do not form a disk.
    int traceLoops()
    {
        m_loopStart.assign(m_clusterCount, kNone);
        m_loopSize.assign(m_clusterCount, 0);
        m_boundaryVertex.clear();
        m_boundaryNeighbor.clear();
        m_edgeUsed.assign(m_tris.size() * 3, 0);
        m_vertexStamp.assign(m_points.size(), kNone);
        const std::size_t guard = m_tris.size() * 3 + 3;
        for (int t = 0; t < static_cast<int>(m_tris.size()); ++t)
        {
            if (!m_tris[t].alive)
            {
                continue;
            }
            const int c = m_clusterOf[t];
            for (int i = 0; i < 3; ++i)
            {
                if (m_clusterOf[m_tris[t].adj[i]] == c || m_edgeUsed[t * 3 + i])
                {
                    continue;
                }
                if (m_loopStart[c] != kNone)
                {
                    return c; // a second loop: the cluster has a hole
                }
                m_loopStart[c] = static_cast<int>(m_boundaryVertex.size());
                int ct = t, ci = i;
                std::size_t steps = 0;
                do
                {
                    m_edgeUsed[ct * 3 + ci] = 1;
                    const int vertex = m_tris[ct].v[ci];
                    if (m_vertexStamp[vertex] == c)
                    {
                        return c; // the boundary touches itself
                    }
                    m_vertexStamp[vertex] = c;
                    m_boundaryVertex.push_back(vertex);
                    m_boundaryNeighbor.push_back(m_clusterOf[m_tris[ct].adj[ci]]);
                    const int pivot = m_tris[ct].v[next3(ci)];
                    int nt = ct, ni = next3(ci);
                    while (m_clusterOf[m_tris[nt].adj[ni]] == c)
                    {
                        const int from = m_tris[nt].v[next3(ni)];
                        const int u = m_tris[nt].adj[ni];
                        int j = 0;
                        while (j < 3 && !(m_tris[u].v[j] == from && m_tris[u].v[next3(j)] == pivot))
                        {
                            ++j;
                        }
                        if (j == 3 || ++steps > guard)
                        {
                            return c;
                        }
                        nt = u;
                        ni = next3(j);
                    }
                    ct = nt;
                    ci = ni;
                    if (++steps > guard)
                    {
                        return c;
                    }
                } while (!(ct == t && ci == i));
                m_loopSize[c] = static_cast<int>(m_boundaryVertex.size()) - m_loopStart[c];
            }
        }
        return kNone;
    }

    /// Turns the traced clusters into faces: drops vertices that touch only one or two clusters (inside
    /// a face or on an edge line) unless a face would keep fewer than 3, and fits the normals.
    bool finishFaces(FaceSet& faces)
    {
        // How many clusters touch each vertex (saturating at 3).
        m_firstCluster.assign(m_points.size(), kNone);
        m_secondCluster.assign(m_points.size(), kNone);
        m_clustersAtVertex.assign(m_points.size(), 0);
        for (int t = 0; t < static_cast<int>(m_tris.size()); ++t)
        {
            if (!m_tris[t].alive)
            {
                continue;
            }
            const int c = m_clusterOf[t];
            for (int v : m_tris[t].v)
            {
                int& count = m_clustersAtVertex[v];
                if (count == 0)
                {
                    m_firstCluster[v] = c;
                    count = 1;
                }
                else if (count == 1 && m_firstCluster[v] != c)
                {
                    m_secondCluster[v] = c;
                    count = 2;
                }
                else if (count == 2 && m_firstCluster[v] != c && m_secondCluster[v] != c)
                {
                    count = 3;
                }
            }
        }
        m_redundant.assign(m_points.size(), 0);
        for (std::size_t v = 0; v < m_points.size(); ++v)
        {
            m_redundant[v] = m_clustersAtVertex[v] > 0 && m_clustersAtVertex[v] <= 2;
        }
        for (bool changed = true; changed;)
        {
            changed = false;
            for (int c = 0; c < m_clusterCount; ++c)
            {
                const int* loop = m_boundaryVertex.data() + std::max(m_loopStart[c], 0);
                int kept = 0;
                for (int k = 0; k < m_loopSize[c]; ++k)
                {
                    kept += m_redundant[loop[k]] ? 0 : 1;
                }
                if (m_loopSize[c] > 0 && kept < 3)
                {
                    for (int k = 0; k < m_loopSize[c]; ++k)
                    {
                        changed = changed || m_redundant[loop[k]];
                        m_redundant[loop[k]] = 0;
                    }
                }
            }
        }

        m_faceOfCluster.assign(m_clusterCount, kNone);
        m_clusterOfFace.clear();
        for (int c = 0; c < m_clusterCount; ++c)
        {
            if (m_loopSize[c] > 0)
            {
                m_faceOfCluster[c] = static_cast<int>(m_clusterOfFace.size());
                m_clusterOfFace.push_back(c);
            }
        }
        faces.loopStart.clear();
        faces.loopVertices.clear();
        faces.loopNeighbor.clear();
        faces.normals.clear();
        faces.loopStart.reserve(m_clusterOfFace.size() + 1);
        faces.loopVertices.reserve(m_boundaryVertex.size());
        faces.loopNeighbor.reserve(m_boundaryVertex.size());
        faces.normals.reserve(m_clusterOfFace.size());
        for (int c : m_clusterOfFace)
        {
            const int first = static_cast<int>(faces.loopVertices.size());
            faces.loopStart.push_back(first);
            for (int k = 0; k < m_loopSize[c]; ++k)
            {
                const int vertex = m_boundaryVertex[m_loopStart[c] + k];
                if (!m_redundant[vertex])
                {
                    // Every side in the run up to the next kept vertex borders the same cluster: a
                    // dropped vertex touches only this cluster and that one.
                    faces.loopVertices.push_back(vertex);
                    faces.loopNeighbor.push_back(m_faceOfCluster[m_boundaryNeighbor[m_loopStart[c] + k]]);
                }
            }
            const int size = static_cast<int>(faces.loopVertices.size()) - first;
            // Newell's method: the loop's area vector, robust for slightly non-planar polygons.
            DVec3 n{};
            for (int k = 0; k < size; ++k)
            {
                n = n + cross(m_points[faces.loopVertices[first + k]],
                              m_points[faces.loopVertices[first + (k + 1) % size]]);
            }
            const double len = length(n);
            if (size < 3 || !(len > 0.0) || !(dot(n, m_clusterNormals[c]) > 0.0))
            {
                return false;
            }
            faces.normals.push_back(n * (1.0 / len));
        }
        faces.loopStart.push_back(static_cast<int>(faces.loopVertices.size()));
        return true;
    }

    /// Two neighbouring faces, as clusters (kept, absorbed), such that all of the absorbed one's
    /// vertices lie within tol below the kept one's plane (through its highest vertex); {kNone, kNone}
    /// if there are none.
    std::pair<int, int> findCoplanarNeighbours(const FaceSet& faces)
    {
        const int faceCount = faces.faceCount();
        m_faceOffsets.assign(faceCount, -std::numeric_limits<double>::infinity());
        for (int f = 0; f < faceCount; ++f)
        {
            for (int k = faces.loopStart[f]; k < faces.loopStart[f + 1]; ++k)
            {
                m_faceOffsets[f] =
                    std::max(m_faceOffsets[f], dot(faces.normals[f], m_points[faces.loopVertices[k]]));
            }
        }
        auto flatOn = [&](int a, int b) { // all of face b within tol below face a's plane?
            for (int k = faces.loopStart[b]; k < faces.loopStart[b + 1]; ++k)
            {
                if (dot(faces.normals[a], m_points[faces.loopVertices[k]]) - m_faceOffsets[a] < -m_tol)
                {
                    return false;
                }
            }
            return true;
        };
        for (int a = 0; a < faceCount; ++a)
        {
            for (int k = faces.loopStart[a]; k < faces.loopStart[a + 1]; ++k)
            {
                const int b = faces.loopNeighbor[k];
                if (flatOn(a, b))
                {
                    return {m_clusterOfFace[a], m_clusterOfFace[b]};
                }
            }
        }
        return {kNone, kNone};
    }

    const std::vector<DVec3>& m_points;
    double m_tol;
    // Triangle stage.
    std::vector<Triangle> m_tris;
    std::vector<int> m_nextConflict;
    std::vector<int> m_horizonFrom;
    std::vector<int> m_visible, m_stack, m_newTris;
    std::vector<HorizonEdge> m_horizon, m_orderedHorizon;
    DVec3 m_interior{};
    int m_stamp = 0;
    std::vector<int> m_alive; ///< live triangles, oldest first
    // Face stage.
    std::vector<int> m_order, m_queue;
    std::vector<int> m_clusterOf;
    std::vector<DVec3> m_clusterNormals;
    int m_clusterCount = 0;
    std::vector<int> m_loopStart, m_loopSize, m_boundaryVertex, m_boundaryNeighbor;
    std::vector<char> m_edgeUsed, m_redundant;
    std::vector<int> m_vertexStamp, m_firstCluster, m_secondCluster, m_clustersAtVertex;
    std::vector<int> m_faceOfCluster, m_clusterOfFace;
    std::vector<double> m_faceOffsets;
};

HullResult refuse(HullError error, std::string message)
{
    HullResult r;
    r.error = error;
    r.message = std::move(message);
    return r;
}

/// Fills hull.edges from the face loops, each undirected edge once with the face on which it runs
/// v0 -> v1 first. False unless every directed side occurs once and has exactly one reverse side.
bool buildEdges(ConvexHull& hull)
{
    const std::size_t vertexCount = hull.vertices.size();
    // Directed sides grouped by their start vertex (counting sort): target vertex and face.
    std::vector<int> start(vertexCount + 1, 0);
    for (const HullFace& face : hull.faces)
    {
        for (int k = 0; k < face.indexCount; ++k)
        {
            ++start[hull.faceVertices[face.firstIndex + k] + 1];
        }
    }
    for (std::size_t v = 0; v < vertexCount; ++v)
    {
        start[v + 1] += start[v];
    }
    std::vector<int> cursor(start.begin(), start.end() - 1);
    std::vector<std::pair<int, int>> sides(static_cast<std::size_t>(start.back())); // (to, face)
    for (std::size_t f = 0; f < hull.faces.size(); ++f)
    {
        const HullFace& face = hull.faces[f];
        for (int k = 0; k < face.indexCount; ++k)
        {
            const int from = hull.faceVertices[face.firstIndex + k];
            const int to = hull.faceVertices[face.firstIndex + (k + 1) % face.indexCount];
            sides[cursor[from]++] = {to, static_cast<int>(f)};
        }
    }
    hull.edges.clear();
    for (int a = 0; a < static_cast<int>(vertexCount); ++a)
    {
        for (int s = start[a]; s < start[a + 1]; ++s)
        {
            const auto [b, face] = sides[s];
            int forward = 0, reverse = 0, reverseFace = kNone;
            for (int r = start[a]; r < start[a + 1]; ++r)
            {
                forward += sides[r].first == b ? 1 : 0;
            }
            for (int r = start[b]; r < start[b + 1]; ++r)
            {
                if (sides[r].first == a)
                {
                    ++reverse;
                    reverseFace = sides[r].second;
                }
            }
            if (a == b || forward != 1 || reverse != 1)
            {
                return false;
            }
            if (a < b)
            {
                hull.edges.push_back({static_cast<std::uint16_t>(a), static_cast<std::uint16_t>(b),
                                      static_cast<std::uint16_t>(face),
                                      static_cast<std::uint16_t>(reverseFace)});
            }
        }
    }
    return true;
}

/// Coordinates of some points in double, one array per axis, so that plane tests over all of them are
/// simple (vectorisable) loops.
struct PointColumns
{
    std::vector<double> x, y, z;

    void assign(std::span<const Vec3> points, const std::vector<int>* subset)
    {
        const std::size_t count = subset ? subset->size() : points.size();
        x.resize(count);
        y.resize(count);
        z.resize(count);
        for (std::size_t i = 0; i < count; ++i)
        {
            const Vec3& p = points[subset ? static_cast<std::size_t>((*subset)[i]) : i];
            x[i] = p.x;
            y[i] = p.y;
            z[i] = p.z;
        }
    }
    /// The largest dot(n, p) over the points (four running maxima, for instruction-level parallelism).
    double support(const DVec3& n) const
    {
        constexpr double lowest = -std::numeric_limits<double>::infinity();
        double best[4] = {lowest, lowest, lowest, lowest};
        const std::size_t count = x.size();
        std::size_t i = 0;
        for (; i + 4 <= count; i += 4)
        {
            for (std::size_t lane = 0; lane < 4; ++lane)
            {
                const double d = n.x * x[i + lane] + n.y * y[i + lane] + n.z * z[i + lane];
                best[lane] = d > best[lane] ? d : best[lane];
            }
        }
        for (; i < count; ++i)
        {
            const double d = n.x * x[i] + n.y * y[i] + n.z * z[i];
            best[0] = d > best[0] ? d : best[0];
        }
        return std::max(std::max(best[0], best[1]), std::max(best[2], best[3]));
    }
};

/// The unit float normal and a float offset no smaller than any hull vertex's projection on it.
void setFacePlane(const PointColumns& hullVertices, const DVec3& normal, HullFace& face)
{
    face.normal = normalize(toFloat(normal));
    const double support = hullVertices.support(toDouble(face.normal));
    float offset = static_cast<float>(support);
    if (static_cast<double>(offset) < support)
    {
        offset = std::nextafter(offset, std::numeric_limits<float>::infinity());
    }
    face.offset = offset;
}

/// Sets hull.centroid to the volume centroid: the volume-weighted mean of the centroids of the
/// tetrahedra joining the mean vertex to a fan triangulation of each face. False if the volume is not
/// positive.
bool setVolumeCentroid(ConvexHull& hull)
{
    DVec3 reference{};
    for (const Vec3& v : hull.vertices)
    {
        reference = reference + toDouble(v);
    }
    reference = reference * (1.0 / static_cast<double>(hull.vertices.size()));
    double sixVolume = 0.0;
    DVec3 weighted{}; // sum of 6 * volume * 4 * (centroid - reference)
    for (const HullFace& face : hull.faces)
    {
        const std::uint16_t* loop = hull.faceVertices.data() + face.firstIndex;
        const DVec3 a = toDouble(hull.vertices[loop[0]]) - reference;
        for (int k = 1; k + 1 < face.indexCount; ++k)
        {
            const DVec3 b = toDouble(hull.vertices[loop[k]]) - reference;
            const DVec3 c = toDouble(hull.vertices[loop[k + 1]]) - reference;
            const double det = dot(a, cross(b, c));
            sixVolume += det;
            weighted = weighted + (a + b + c) * det;
        }
    }
    if (!(sixVolume > 0.0))
    {
        return false;
    }
    hull.centroid = toFloat(reference + weighted * (1.0 / (4.0 * sixVolume)));
    return true;
}

/// Checks the promises of buildConvexHull on the finished hull, in the caller's units. otherPoints
/// are the input points that are not hull vertices.
bool hullIsSound(const ConvexHull& hull, const PointColumns& otherPoints, double tolerance)
{
    const auto vertexCount = static_cast<long>(hull.vertices.size());
    const auto faceCount = static_cast<long>(hull.faces.size());
    if (vertexCount - static_cast<long>(hull.edges.size()) + faceCount != 2)
    {
        return false;
    }
    for (const HullFace& face : hull.faces)
    {
        const DVec3 n = toDouble(face.normal);
        if (!isFinite(face.normal) || std::fabs(length(n) - 1.0) > 1e-6 || !std::isfinite(face.offset))
        {
            return false;
        }
        const std::uint16_t* loop = hull.faceVertices.data() + face.firstIndex;
        for (int k = 0; k < face.indexCount; ++k)
        {
            const DVec3 a = toDouble(hull.vertices[loop[k]]);
            const DVec3 b = toDouble(hull.vertices[loop[(k + 1) % face.indexCount]]);
            const DVec3 c = toDouble(hull.vertices[loop[(k + 2) % face.indexCount]]);
            // Planar within a few tolerances, and convex: c is not right of the line a -> b.
            const double ab = length(b - a);
            if (dot(n, a) < face.offset - 4.0 * tolerance || !(ab > 0.0) ||
                dot(cross(b - a, c - b), n) < -tolerance * ab)
            {
                return false;
            }
        }
        // Hull vertices are below every plane by construction of the offsets; check the other points.
        if (otherPoints.support(n) - face.offset > tolerance)
        {
            return false;
        }
    }
    return true;
}

} // namespace

const char* toString(HullError error)
{
    switch (error)
    {
    case HullError::None:
        return "None";
    case HullError::TooFewPoints:
        return "TooFewPoints";
    case HullError::NonFinitePoint:
        return "NonFinitePoint";
    case HullError::Degenerate:
        return "Degenerate";
    case HullError::TooManyVertices:
        return "TooManyVertices";
    case HullError::NumericalFailure:
        return "NumericalFailure";
    }
    return "Unknown";
}

HullResult buildConvexHull(std::span<const Vec3> points)
{
    if (points.size() < 4)
    {
        return refuse(HullError::TooFewPoints,
                      "a hull needs at least 4 points, got " + std::to_string(points.size()));
    }
    if (points.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    {
        return refuse(HullError::TooManyVertices, "too many points");
    }
    DVec3 lo{DBL_MAX, DBL_MAX, DBL_MAX}, hi{-DBL_MAX, -DBL_MAX, -DBL_MAX};
    double maxAbs = 0.0;
    for (std::size_t i = 0; i < points.size(); ++i)
    {
        const Vec3& p = points[i];
        if (!isFinite(p))
        {
            return refuse(HullError::NonFinitePoint, "point " + std::to_string(i) + " is not finite");
        }
        lo = {std::min(lo.x, double{p.x}), std::min(lo.y, double{p.y}), std::min(lo.z, double{p.z})};
        hi = {std::max(hi.x, double{p.x}), std::max(hi.y, double{p.y}), std::max(hi.z, double{p.z})};
        maxAbs = std::max({maxAbs, std::fabs(double{p.x}), std::fabs(double{p.y}), std::fabs(double{p.z})});
    }
    const double extent = std::max({hi.x - lo.x, hi.y - lo.y, hi.z - lo.z});
    // Float input far from the origin is no finer than its ulp there, so the tolerance is at least a few.
    const double baseTolerance = double{kHullRelativeTolerance} * extent + 4.0 * double{FLT_EPSILON} * maxAbs;
    const double minThickness = double{kHullMinThicknessInTolerances} * baseTolerance;
    if (!(extent > minThickness))
    {
        return refuse(HullError::Degenerate, "the points (nearly) coincide");
    }

    // Normalised copy: bounding-box centre at the origin, largest side 1.
    const DVec3 center = (lo + hi) * 0.5;
    const double inverseExtent = 1.0 / extent;
    std::vector<DVec3> normalized(points.size());
    for (std::size_t i = 0; i < points.size(); ++i)
    {
        normalized[i] = (toDouble(points[i]) - center) * inverseExtent;
    }
    const double thickness = minThickness * inverseExtent;

    // Initial tetrahedron: the farthest pair among the axis extremes, the point farthest from their
    // line, and the point farthest from the plane of those three.
    std::array<int, 6> extremes{};
    for (int axis = 0; axis < 3; ++axis)
    {
        auto coordinate = [axis](const DVec3& v) { return axis == 0 ? v.x : (axis == 1 ? v.y : v.z); };
        for (int i = 0; i < static_cast<int>(points.size()); ++i)
        {
            if (coordinate(normalized[i]) < coordinate(normalized[extremes[2 * axis]]))
            {
                extremes[2 * axis] = i;
            }
            if (coordinate(normalized[i]) > coordinate(normalized[extremes[2 * axis + 1]]))
            {
                extremes[2 * axis + 1] = i;
            }
        }
    }
    std::array<int, 4> simplex{};
    double best = -1.0;
    for (int a = 0; a < 6; ++a)
    {
        for (int b = a + 1; b < 6; ++b)
        {
            const double d = length(normalized[extremes[a]] - normalized[extremes[b]]);
            if (d > best)
            {
                best = d;
                simplex[0] = extremes[a];
                simplex[1] = extremes[b];
            }
        }
    }
    const DVec3 p0 = normalized[simplex[0]];
    const DVec3 axisDir = (normalized[simplex[1]] - p0) * (1.0 / best);
    best = -1.0;
    for (int i = 0; i < static_cast<int>(points.size()); ++i)
    {
        const double d = length(cross(normalized[i] - p0, axisDir));
        if (d > best)
        {
            best = d;
            simplex[2] = i;
        }
    }
    if (!(best > thickness))
    {
        return refuse(HullError::Degenerate, "the points are (nearly) collinear");
    }
    DVec3 planeNormal = cross(normalized[simplex[1]] - p0, normalized[simplex[2]] - p0);
    planeNormal = planeNormal * (1.0 / length(planeNormal));
    best = -1.0;
    double signedBest = 0.0;
    for (int i = 0; i < static_cast<int>(points.size()); ++i)
    {
        const double d = dot(planeNormal, normalized[i] - p0);
        if (std::fabs(d) > best)
        {
            best = std::fabs(d);
            signedBest = d;
            simplex[3] = i;
        }
    }
    if (!(best > thickness))
    {
        return refuse(HullError::Degenerate, "the points are (nearly) coplanar");
    }
    if (signedBest > 0.0)
    {
        std::swap(simplex[1], simplex[2]);
    }

    double tolerance = baseTolerance * inverseExtent;
    for (int attempt = 0; attempt < kAttempts; ++attempt, tolerance *= kToleranceGrowth)
    {
        HullBuilder builder(normalized, tolerance);
        const Outcome outcome = builder.build(simplex);
        if (outcome == Outcome::TooManyVertices)
        {
            return refuse(HullError::TooManyVertices,
                          "the hull has more than " + std::to_string(kMaxHullVertices) + " vertices");
        }
        FaceSet faces;
        if (outcome != Outcome::Done || !builder.extractFaces(faces))
        {
            continue;
        }

        // Vertices in input order, then faces, then edges, in the caller's units.
        std::vector<int> remap(points.size(), kNone);
        for (int v : faces.loopVertices)
        {
            remap[v] = 0;
        }
        HullResult result;
        ConvexHull& hull = result.hull;
        hull.vertices.reserve(faces.loopVertices.size() / 3 + 3);
        std::vector<int> otherPoints; // input points that are not hull vertices
        for (int i = 0; i < static_cast<int>(points.size()); ++i)
        {
            if (remap[i] != kNone)
            {
                remap[i] = static_cast<int>(hull.vertices.size());
                hull.vertices.push_back(points[i]);
            }
            else
            {
                otherPoints.push_back(i);
            }
        }
        if (hull.vertices.size() > kMaxHullVertices)
        {
            return refuse(HullError::TooManyVertices, "the hull has " + std::to_string(hull.vertices.size()) +
                                                          " vertices, more than " +
                                                          std::to_string(kMaxHullVertices));
        }
        PointColumns columns;
        columns.assign(hull.vertices, nullptr);
        hull.faces.reserve(faces.normals.size());
        hull.faceVertices.reserve(faces.loopVertices.size());
        for (int f = 0; f < faces.faceCount(); ++f)
        {
            HullFace face;
            face.firstIndex = static_cast<std::uint16_t>(faces.loopStart[f]);
            face.indexCount = static_cast<std::uint16_t>(faces.loopStart[f + 1] - faces.loopStart[f]);
            for (int k = faces.loopStart[f]; k < faces.loopStart[f + 1]; ++k)
            {
                hull.faceVertices.push_back(static_cast<std::uint16_t>(remap[faces.loopVertices[k]]));
            }
            setFacePlane(columns, faces.normals[f], face);
            hull.faces.push_back(face);
        }
        // Edges straight from the loops: each side once, from the face where it runs low -> high index.
        hull.edges.reserve(hull.faceVertices.size() / 2);
        for (int f = 0; f < faces.faceCount(); ++f)
        {
            const int first = faces.loopStart[f], size = faces.loopStart[f + 1] - first;
            for (int k = 0; k < size; ++k)
            {
                const int a = remap[faces.loopVertices[first + k]];
                const int b = remap[faces.loopVertices[first + (k + 1) % size]];
                if (a < b)
                {
                    hull.edges.push_back({static_cast<std::uint16_t>(a), static_cast<std::uint16_t>(b),
                                          static_cast<std::uint16_t>(f),
                                          static_cast<std::uint16_t>(faces.loopNeighbor[first + k])});
                }
            }
        }
        const double toleranceMeters = tolerance * extent;
        columns.assign(points, &otherPoints);
        if (2 * hull.edges.size() != hull.faceVertices.size() || !hullIsSound(hull, columns, toleranceMeters))
        {
            continue;
        }
        if (!setVolumeCentroid(hull))
        {
            continue;
        }
        buildHullAdjacency(hull);
        result.toleranceMeters = static_cast<float>(toleranceMeters);
        return result;
    }
    return refuse(HullError::NumericalFailure, "no valid hull found, even with enlarged tolerances");
}

ConvexHull makeBoxHull(const Vec3& halfExtents)
{
    ConvexHull hull;
    // Vertex i has coordinate +h on axis k when bit k of i is set, -h otherwise.
    for (int i = 0; i < 8; ++i)
    {
        hull.vertices.push_back({(i & 1) ? halfExtents.x : -halfExtents.x,
                                 (i & 2) ? halfExtents.y : -halfExtents.y,
                                 (i & 4) ? halfExtents.z : -halfExtents.z});
    }
    // Faces +x, -x, +y, -y, +z, -z. With (u, w) the next two axes (e_u x e_w = e_axis), the loop about
    // +e_axis is (-,-), (+,-), (+,+), (-,+) in (u, w), and about -e_axis (-,-), (-,+), (+,+), (+,-).
    const std::array<std::array<int, 2>, 4> positive{{{0, 0}, {1, 0}, {1, 1}, {0, 1}}};
    const std::array<std::array<int, 2>, 4> negative{{{0, 0}, {0, 1}, {1, 1}, {1, 0}}};
    for (int axis = 0; axis < 3; ++axis)
    {
        const int u = (axis + 1) % 3, w = (axis + 2) % 3;
        for (int sign : {1, -1})
        {
            HullFace face;
            face.normal[axis] = static_cast<float>(sign);
            face.offset = halfExtents[axis];
            face.firstIndex = static_cast<std::uint16_t>(hull.faceVertices.size());
            face.indexCount = 4;
            for (const auto& corner : sign > 0 ? positive : negative)
            {
                const int index = (sign > 0 ? (1 << axis) : 0) | (corner[0] << u) | (corner[1] << w);
                hull.faceVertices.push_back(static_cast<std::uint16_t>(index));
            }
            hull.faces.push_back(face);
        }
    }
    buildEdges(hull);
    // Edge 4 * axis + c runs along that axis; c holds the lower vertex's bits on the next two axes.
    const auto edgeSlot = [](const HullEdge& e)
    {
        const int axis = (e.v0 ^ e.v1) == 1 ? 0 : ((e.v0 ^ e.v1) == 2 ? 1 : 2);
        return 4 * axis + ((e.v0 >> ((axis + 1) % 3)) & 1) + 2 * ((e.v0 >> ((axis + 2) % 3)) & 1);
    };
    std::sort(hull.edges.begin(), hull.edges.end(),
              [&](const HullEdge& a, const HullEdge& b) { return edgeSlot(a) < edgeSlot(b); });
    hull.centroid = {};
    buildHullAdjacency(hull);
    return hull;
}

bool buildHullAdjacency(ConvexHull& hull)
{
    hull.faceEdges.clear();
    hull.vertexEdgeStart.clear();
    hull.vertexEdges.clear();
    const std::size_t vertexCount = hull.vertices.size();
    // Vertex -> edges by counting sort; face sides -> edges through the edges at the side's start vertex.
    std::vector<std::uint16_t> start(vertexCount + 1, 0);
    for (const HullEdge& e : hull.edges)
    {
        if (e.v0 >= vertexCount || e.v1 >= vertexCount)
        {
            return false;
        }
        ++start[e.v0 + 1];
        ++start[e.v1 + 1];
    }
    for (std::size_t v = 0; v < vertexCount; ++v)
    {
        start[v + 1] = static_cast<std::uint16_t>(start[v + 1] + start[v]);
    }
    std::vector<std::uint16_t> edgesAt(2 * hull.edges.size());
    std::vector<std::uint16_t> cursor(start.begin(), start.end() - 1);
    for (std::size_t i = 0; i < hull.edges.size(); ++i)
    {
        edgesAt[cursor[hull.edges[i].v0]++] = static_cast<std::uint16_t>(i);
        edgesAt[cursor[hull.edges[i].v1]++] = static_cast<std::uint16_t>(i);
    }
    std::vector<std::uint16_t> faceEdges(hull.faceVertices.size());
    for (const HullFace& face : hull.faces)
    {
        for (int k = 0; k < face.indexCount; ++k)
        {
            const int from = hull.faceVertices[face.firstIndex + k];
            const int to = hull.faceVertices[face.firstIndex + (k + 1) % face.indexCount];
            int found = -1;
            for (int s = start[from]; s < start[from + 1] && found < 0; ++s)
            {
                const HullEdge& e = hull.edges[edgesAt[s]];
                found = ((e.v0 == from && e.v1 == to) || (e.v0 == to && e.v1 == from)) ? edgesAt[s] : -1;
            }
            if (found < 0)
            {
                return false;
            }
            faceEdges[face.firstIndex + k] = static_cast<std::uint16_t>(found);
        }
    }
    hull.faceEdges = std::move(faceEdges);
    hull.vertexEdgeStart = std::move(start);
    hull.vertexEdges = std::move(edgesAt);
    return true;
}

} // namespace polytope::physics
