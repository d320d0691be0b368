// polytope-viewer: where the bodies come from. Every source hands the renderer a ViewFrame per display
// frame through the same small interface, and every one that blends states does it with
// client::InterpolationBuffer:
//   LiveSource   a running polytope-server (client::UdpClient), snapshots interpolated at the display rate;
//   LocalSource  a built-in physics scene stepped in-process at 60 Hz (on its own thread), or, when
//                deterministic, exactly one step per displayed frame (tests, screenshots); only when built
//                with POLYTOPE_VIEWER_LOCAL_SIM (the one part of the viewer that links the engine);
//   ReplaySource a recording (client::RecordingReader), played by server time.
#pragma once

#include "viewer/view_frame.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace polytope::viewer
{

class ViewSource
{
  public:
    virtual ~ViewSource() = default;
    /// One line naming the source (shown in the panel).
    virtual std::string description() const = 0;
    /// Receives or steps (now: seconds of the viewer's clock). Returns false once the source has ended;
    /// error() then says why.
    virtual bool update(double now) = 0;
    /// The state to draw at `now`. Returns false while there is nothing to show yet.
    virtual bool frame(double now, ViewFrame& out) = 0;
    virtual SourceStats stats() const = 0;
    virtual std::string error() const { return {}; }
    /// Surfaces that bodies' hullIndex refers to: the engine's shapes in local scenes, the geometry received
    /// (protocol/geometry.h) in live views and replays.
    virtual const std::vector<HullMesh>& hullMeshes() const
    {
        static const std::vector<HullMesh> none;
        return none;
    }
    /// Changes whenever hullMeshes() does (live geometry arrives after the first frames): upload again then.
    virtual std::uint64_t hullMeshesVersion() const { return 0; }
    /// Pauses or resumes the simulation (local scenes only).
    virtual void setPaused(bool) {}
    virtual bool paused() const { return false; }
};

struct LocalOptions
{
    std::string scene = "mixed"; ///< a built-in scene name, or pile:N / stack:N / pyramid:N
    bool deterministic = false;  ///< one step per displayed frame, on the caller's thread
    bool paused = false;
    double stepRateHz = 60.0;
};

/// False when the viewer was built without local scenes (POLYTOPE_VIEWER_LOCAL_SIM=OFF, no engine linked).
bool localScenesAvailable();

/// Creates a local scene source. Returns nullptr and sets error for an unknown scene, or for any scene when
/// local scenes are not built in.
std::unique_ptr<ViewSource> makeLocalSource(const LocalOptions& options, std::string& error);

/// Creates a live source connected to host:port, with the token in `tokenFile`, else one made with
/// `tokenKey` (hex), else none (client/token_file.h's toolToken). Returns nullptr and sets error when the
/// address does not resolve or the token cannot be read or made.
std::unique_ptr<ViewSource> makeLiveSource(const std::string& hostPort, double connectTimeoutSeconds,
                                           const std::string& tokenFile, const std::string& tokenKey,
                                           std::string& error);

/// Creates a source that plays a recording (client/recording.h) by its server time at `speed` (1 = real
/// time); deterministic: 1/60 s of server time per displayed frame. Returns nullptr and sets error when the
/// file is not a readable recording.
std::unique_ptr<ViewSource> makeReplaySource(const std::string& path, bool deterministic, double speed,
                                             std::string& error);

/// Names of the built-in scenes plus the sized forms, for --help.
std::string sceneNamesHelp();

} // namespace polytope::viewer
