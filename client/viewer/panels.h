// polytope-viewer: the Dear ImGui panels (statistics with plots over time, the selected body).
#pragma once

#include "viewer/view_frame.h"

#include <array>
#include <string>

namespace polytope::viewer
{

/// The last kSamples values of one quantity, oldest first when plotted.
class History
{
  public:
    static constexpr int kSamples = 300;
    void push(float value);
    /// Draws the plot; `unit` follows the newest value in the overlay. Shows "n/a" when nothing was known.
    void plot(const char* label, const char* unit) const;

  private:
    std::array<float, kSamples> m_values{};
    int m_next = 0;
    int m_count = 0;
    bool m_known = false;
};

struct PanelState
{
    History frameMs;
    History snapshotRate;
    History jitterMs;
    History kbps;
    History rttMs;
    History stepMs;
    bool pauseRequested = false;
    bool showJoints = false; ///< the "Joints" toggle: draw joint anchors and axes (local scenes)
};

struct PanelInput
{
    std::string source;
    const ViewFrame* frame = nullptr;
    const ViewBody* selected = nullptr;
    SourceStats stats;
    double fps = 0.0;
    int drawCalls = 0;
    bool canPause = false;
    bool paused = false;
};

/// Draws every panel for this frame (between ImGui::NewFrame and ImGui::Render).
void drawPanels(const PanelInput& input, PanelState& state);

} // namespace polytope::viewer
