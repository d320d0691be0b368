// Wavefront OBJ into triangle arrays (mesh_file_readers.h).
//
// tinyobjloader (Debian's shared library) parses the text, from memory: material libraries are given as
// empty, so an "mtllib" line never makes it open a file. Faces are taken whole (its own triangulation is off)
// and split here, so that each triangle is known to come from one face, and each face from one line: a scan
// of our own finds the file's face lines by tinyobjloader's own rule, and when they match its faces one for
// one (same count, same corner counts), messages name the line. Splitting: a triangle as it is; a quad along
// the diagonal that keeps both halves facing the quad's way (the shorter one when both do, as tinyobjloader);
// a face of five or more corners as a fan from its first corner, which is right for convex faces only (level
// exporters triangulate anything else, or can be told to).
//
// Vertex indices are checked here (tinyobjloader does not); OBJ's numbers count from 1, and negative ones
// back from the last vertex read so far, which tinyobjloader resolves. Line ("l") and point ("p") elements,
// normals, texture coordinates and colours are ignored.
#include "mesh_file_readers.h"
#include "polytope/server/regular_file.h"

#include <tiny_obj_loader.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

namespace polytope::server::detail
{
namespace
{

/// tinyobjloader keeps each face's corner count in an unsigned char.
constexpr std::size_t kMaxFaceCorners = 255;

/// The lines of `text` that tinyobjloader reads as vertices and as faces (1-based line numbers, with each
/// face's corner count), found by its own rules: lines end at "\n", "\r\n" or "\r"; a NUL ends a line's
/// text; leading blanks are skipped; "v" or "f" followed by a blank starts a vertex or a face, whose corners
/// are the blank-separated words after it.
struct LineScan
{
    std::vector<std::uint32_t> vertexLines;
    std::vector<std::uint32_t> faceLines;
    std::vector<std::size_t> faceCorners;
};

LineScan scanLines(std::string_view text)
{
    LineScan scan;
    std::uint32_t lineNumber = 0;
    std::size_t at = 0;
    while (at < text.size())
    {
        std::size_t end = at;
        while (end < text.size() && text[end] != '\n' && text[end] != '\r')
        {
            ++end;
        }
        ++lineNumber;
        std::string_view line = text.substr(at, end - at);
        at = end;
        if (at < text.size())
        {
            at += (text[at] == '\r' && at + 1 < text.size() && text[at + 1] == '\n') ? 2 : 1;
        }
        line = line.substr(0, line.find('\0'));
        const std::size_t start = line.find_first_not_of(" \t");
        if (start == std::string_view::npos || line.size() < start + 2 ||
            (line[start + 1] != ' ' && line[start + 1] != '\t'))
        {
            continue;
        }
        if (line[start] == 'v')
        {
            scan.vertexLines.push_back(lineNumber);
        }
        else if (line[start] == 'f')
        {
            std::size_t corners = 0;
            std::size_t i = start + 1;
            while (i < line.size())
            {
                i = line.find_first_not_of(" \t", i);
                if (i == std::string_view::npos)
                {
                    break;
                }
                ++corners;
                i = line.find_first_of(" \t", i);
                if (i == std::string_view::npos)
                {
                    break;
                }
            }
            scan.faceLines.push_back(lineNumber);
            scan.faceCorners.push_back(corners);
        }
    }
    return scan;
}

/// The first line of a parser message, trimmed and printable.
std::string firstLine(const std::string& text)
{
    std::string line = text.substr(0, text.find('\n'));
    while (!line.empty() && (line.back() == ' ' || line.back() == '\r'))
    {
        line.pop_back();
    }
    return printableExcerpt(line, 300);
}

/// tinyobjloader's message with the line it names moved to the front, as the loader's other messages have
/// it: "Failed parse `f' line(e.g. zero value for face index. line 6.)" becomes "line 6: Failed parse `f'
/// line(e.g. zero value for face index)".
std::string parserMessage(const std::string& text)
{
    const std::string line = firstLine(text);
    for (const std::string_view marker : {std::string_view("line: "), std::string_view("line ")})
    {
        const std::size_t at = line.rfind(marker);
        std::size_t end = at == std::string::npos ? at : at + marker.size();
        if (at == std::string::npos || end >= line.size() ||
            !std::isdigit(static_cast<unsigned char>(line[end])))
        {
            continue;
        }
        while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end])))
        {
            ++end;
        }
        std::string rest = line.substr(0, at);
        while (!rest.empty() && (rest.back() == ' ' || rest.back() == '.' || rest.back() == '('))
        {
            rest.pop_back();
        }
        if (rest.find('(') != std::string::npos && rest.find(')') == std::string::npos)
        {
            rest += ')';
        }
        return "line " + line.substr(at + marker.size(), end - at - marker.size()) + ": " + rest;
    }
    return line;
}

struct Point
{
    double x, y, z;
};

Point sub(const Point& a, const Point& b)
{
    return {a.x - b.x, a.y - b.y, a.z - b.z};
}

Point cross(const Point& a, const Point& b)
{
    return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

double dot(const Point& a, const Point& b)
{
    return a.x * b.x + a.y * b.y + a.z * b.z;
}

} // namespace

bool readObj(std::string_view bytes, const MeshFileOptions& options, MeshArrays& out, ReadFailure& failure)
{
    const LineScan scan = scanLines(bytes);
    for (std::size_t f = 0; f < scan.faceLines.size(); ++f)
    {
        if (scan.faceCorners[f] > kMaxFaceCorners)
        {
            failure = {GeometryFileError::Unsupported,
                       "line " + std::to_string(scan.faceLines[f]) + ": a face of " +
                           std::to_string(scan.faceCorners[f]) + " corners (at most " +
                           std::to_string(kMaxFaceCorners) + ")"};
            return false;
        }
    }

    tinyobj::ObjReaderConfig config;
    config.triangulate = false;
    config.vertex_color = false;
    tinyobj::ObjReader reader;
    if (!reader.ParseFromString(std::string(bytes), std::string(), config))
    {
        failure = {GeometryFileError::Malformed, reader.Error().empty()
                                                     ? std::string("tinyobjloader refused the file")
                                                     : parserMessage(reader.Error())};
        return false;
    }
    const tinyobj::attrib_t& attrib = reader.GetAttrib();
    const std::vector<tinyobj::shape_t>& shapes = reader.GetShapes();
    const std::size_t vertexCount = attrib.vertices.size() / 3;
    const bool vertexLinesKnown = scan.vertexLines.size() == vertexCount;

    // Match the scan's faces (those of 3 corners or more: tinyobjloader drops the others) to the parser's.
    std::vector<std::uint32_t> faceLines;
    std::vector<std::size_t> faceCorners;
    std::size_t shortFaces = 0;
    for (std::size_t f = 0; f < scan.faceLines.size(); ++f)
    {
        if (scan.faceCorners[f] >= 3)
        {
            faceLines.push_back(scan.faceLines[f]);
            faceCorners.push_back(scan.faceCorners[f]);
        }
        else
        {
            ++shortFaces;
        }
    }
    std::size_t parsedFaces = 0;
    bool linesKnown = true;
    for (const tinyobj::shape_t& shape : shapes)
    {
        std::size_t corners = 0;
        for (std::size_t f = 0; f < shape.mesh.num_face_vertices.size(); ++f, ++parsedFaces)
        {
            const std::size_t n = shape.mesh.num_face_vertices[f];
            corners += n;
            linesKnown = linesKnown && parsedFaces < faceLines.size() && faceCorners[parsedFaces] == n;
        }
        if (corners != shape.mesh.indices.size())
        {
            failure = {GeometryFileError::Malformed,
                       "the parser's faces and corners disagree (" + std::to_string(corners) + " counted, " +
                           std::to_string(shape.mesh.indices.size()) + " read)"};
            return false;
        }
    }
    linesKnown = linesKnown && parsedFaces == faceLines.size();
    if (shortFaces > 0)
    {
        out.warnings.push_back("ignored " + std::to_string(shortFaces) + " faces of fewer than 3 corners");
    }

    // Vertices: every one in the file, checked.
    if (vertexCount > physics::kMaxMeshVertices)
    {
        failure = {GeometryFileError::TooManyTriangles,
                   "more than " + std::to_string(physics::kMaxMeshVertices) + " vertices"};
        return false;
    }
    out.vertices.reserve(vertexCount);
    for (std::size_t i = 0; i < vertexCount; ++i)
    {
        const double x = attrib.vertices[3 * i];
        const double y = attrib.vertices[3 * i + 1];
        const double z = attrib.vertices[3 * i + 2];
        const double limit = options.maxCoordinateMeters;
        if (!(std::fabs(x) <= limit && std::fabs(y) <= limit && std::fabs(z) <= limit))
        {
            const std::string where =
                vertexLinesKnown ? "line " + std::to_string(scan.vertexLines[i]) + ": vertex " : "vertex ";
            const bool finite = std::isfinite(x) && std::isfinite(y) && std::isfinite(z);
            failure = {GeometryFileError::InvalidGeometry,
                       where + std::to_string(i + 1) +
                           (finite ? " lies beyond " + formatNumber(limit) + " m " : " is not finite ") +
                           formatPoint(x, y, z)};
            return false;
        }
        out.vertices.push_back({static_cast<float>(x), static_cast<float>(y), static_cast<float>(z)});
    }

    // Faces, split into triangles.
    const std::size_t maxTriangles = std::min(options.maxTriangles, physics::kMaxMeshTriangles);
    std::size_t face = 0;
    std::size_t ignoredLines = 0;
    std::size_t ignoredPoints = 0;
    for (std::size_t s = 0; s < shapes.size(); ++s)
    {
        const tinyobj::shape_t& shape = shapes[s];
        ignoredLines += shape.lines.num_line_vertices.size();
        ignoredPoints += shape.points.indices.size();
        const auto firstTriangle = static_cast<std::uint32_t>(out.indices.size() / 3);
        std::size_t corner = 0;
        for (std::size_t f = 0; f < shape.mesh.num_face_vertices.size(); ++f, ++face)
        {
            const std::size_t n = shape.mesh.num_face_vertices[f];
            const std::string where =
                linesKnown ? "line " + std::to_string(faceLines[face]) + ": "
                           : "object " + std::to_string(s) + " face " + std::to_string(f) + ": ";
            std::uint32_t v[kMaxFaceCorners];
            for (std::size_t k = 0; k < n; ++k)
            {
                const int index = shape.mesh.indices[corner + k].vertex_index;
                if (index < 0 || static_cast<std::size_t>(index) >= vertexCount)
                {
                    failure = {GeometryFileError::InvalidGeometry,
                               where + "corner " + std::to_string(k + 1) +
                                   (index < 0 ? " names a vertex before the first"
                                              : " names vertex " + std::to_string(index + 1) +
                                                    ", but the file has " + std::to_string(vertexCount) +
                                                    " vertices")};
                    return false;
                }
                v[k] = static_cast<std::uint32_t>(index);
            }
            corner += n;
            if (n < 3)
            {
                continue; // not made by tinyobjloader, which drops such faces
            }
            if (n - 2 > maxTriangles - out.indices.size() / 3)
            {
                failure = {GeometryFileError::TooManyTriangles, "more than " + std::to_string(maxTriangles) +
                                                                    " triangles (at " +
                                                                    where.substr(0, where.size() - 2) + ")"};
                return false;
            }
            if (linesKnown)
            {
                out.faceFirstTriangle.push_back(static_cast<std::uint32_t>(out.indices.size() / 3));
                out.faceLine.push_back(faceLines[face]);
            }
            if (n == 4)
            {
                const auto at = [&](std::uint32_t i)
                {
                    const physics::Vec3& p = out.vertices[i];
                    return Point{p.x, p.y, p.z};
                };
                const Point a = at(v[0]), b = at(v[1]), c = at(v[2]), d = at(v[3]);
                const Point normal = cross(sub(c, a), sub(d, b)); // the quad's way, from its diagonals
                const bool acFaces = dot(cross(sub(b, a), sub(c, a)), normal) > 0.0 &&
                                     dot(cross(sub(c, a), sub(d, a)), normal) > 0.0;
                const bool bdFaces = dot(cross(sub(b, a), sub(d, a)), normal) > 0.0 &&
                                     dot(cross(sub(c, b), sub(d, b)), normal) > 0.0;
                const Point ac = sub(c, a), bd = sub(d, b);
                const bool useBd = bdFaces && (!acFaces || dot(bd, bd) < dot(ac, ac));
                if (useBd)
                {
                    out.indices.insert(out.indices.end(), {v[0], v[1], v[3], v[1], v[2], v[3]});
                }
                else
                {
                    out.indices.insert(out.indices.end(), {v[0], v[1], v[2], v[0], v[2], v[3]});
                }
                continue;
            }
            for (std::size_t k = 1; k + 1 < n; ++k)
            {
                out.indices.insert(out.indices.end(), {v[0], v[k], v[k + 1]});
            }
        }
        const auto lastTriangle = static_cast<std::uint32_t>(out.indices.size() / 3);
        if (lastTriangle > firstTriangle)
        {
            const std::string element = shape.name.empty()
                                            ? "object " + std::to_string(s)
                                            : "object '" + printableExcerpt(shape.name, 64) + "'";
            out.parts.push_back({element, firstTriangle, lastTriangle - firstTriangle});
        }
    }
    if (ignoredLines > 0 || ignoredPoints > 0)
    {
        out.warnings.push_back("ignored " + std::to_string(ignoredLines) + " line and " +
                               std::to_string(ignoredPoints) + " point elements");
    }
    return true;
}

} // namespace polytope::server::detail
