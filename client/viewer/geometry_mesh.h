// polytope-viewer: surfaces of the geometry a server sent (protocol/geometry.h), for the renderer.
//
// Live views (from the client) and replays (from the recording) get hulls, meshes, heightfields and compounds
// by content hash. Each is turned once
// into a HullMesh (flat-shaded triangles in the body's local frame) and given an index among the source's
// meshes; ViewBody::hullIndex then names it, as local scenes do with their engine's shapes.
#pragma once

#include "viewer/view_frame.h"

#include "polytope/protocol/geometry.h"

#include <cstdint>
#include <map>
#include <vector>

namespace polytope::viewer
{

/// Largest heightfield or mesh tessellated (triangles); larger ones are drawn as their bounding box.
inline constexpr std::size_t kMaxGeometryTriangles = 2'000'000;

/// The surface of `geometry`: hull faces (as fans), mesh triangles, heightfield cells without the holes,
/// compound children (hulls by their faces, boxes by theirs, spheres and capsules as their boxes). Empty when
/// it has more than kMaxGeometryTriangles triangles.
HullMesh surfaceOf(const protocol::Geometry& geometry);

/// The surfaces made so far, by hash; `version` changes whenever one is added (the renderer re-uploads).
class GeometrySurfaces
{
  public:
    /// The index of the surface of `hash` among meshes(), made from `geometry` on first use; -1 when `hash`
    /// is not in `geometry` yet or its surface is empty.
    int indexOf(std::uint64_t hash, const std::map<std::uint64_t, protocol::Geometry>& geometry);
    /// The same for verified geometry by hash: a live client's (GeometryAssembler::complete()) or a
    /// recording's (client::RecordingReader::geometry()).
    int indexOf(std::uint64_t hash, const std::map<std::uint64_t, protocol::ReceivedGeometry>& received);
    int indexOf(std::uint64_t hash, const protocol::GeometryAssembler& assembler)
    {
        return indexOf(hash, assembler.complete());
    }
    const std::vector<HullMesh>& meshes() const { return m_meshes; }
    std::uint64_t version() const { return m_meshes.size(); }

  private:
    int add(std::uint64_t hash, const protocol::Geometry& geometry);

    std::map<std::uint64_t, int> m_index;
    std::vector<HullMesh> m_meshes;
};

} // namespace polytope::viewer
