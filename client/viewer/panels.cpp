#include "viewer/panels.h"

#include <imgui.h>

#include <algorithm>
#include <cstdio>

namespace polytope::viewer
{
namespace
{

const char* shapeName(ShapeKind kind)
{
    return polytope::protocol::shapeKindName(kind);
}

void row3(const char* label, const std::array<float, 3>& v)
{
    ImGui::Text("%-12s %8.3f %8.3f %8.3f", label, static_cast<double>(v[0]), static_cast<double>(v[1]),
                static_cast<double>(v[2]));
}

} // namespace

void History::push(float value)
{
    if (value < 0.0f)
    {
        value = 0.0f; // unknown: plotted as 0, overlay says n/a while nothing was ever known
    }
    else
    {
        m_known = true;
    }
    m_values[static_cast<std::size_t>(m_next)] = value;
    m_next = (m_next + 1) % kSamples;
    m_count = std::min(m_count + 1, kSamples);
}

void History::plot(const char* label, const char* unit) const
{
    char overlay[64];
    if (!m_known || m_count == 0)
    {
        std::snprintf(overlay, sizeof overlay, "n/a");
    }
    else
    {
        const float newest = m_values[static_cast<std::size_t>((m_next + kSamples - 1) % kSamples)];
        std::snprintf(overlay, sizeof overlay, "%.2f %s", static_cast<double>(newest), unit);
    }
    const int offset = m_count < kSamples ? 0 : m_next;
    float top = 0.0f;
    for (int i = 0; i < m_count; ++i)
    {
        top = std::max(top, m_values[static_cast<std::size_t>(i)]);
    }
    ImGui::PlotLines(label, m_values.data(), m_count, offset, overlay, 0.0f, top > 0.0f ? top * 1.1f : 1.0f,
                     ImVec2(0.0f, 44.0f));
}

void drawPanels(const PanelInput& input, PanelState& state)
{
    ImGui::SetNextWindowPos(ImVec2(10.0f, 10.0f), ImGuiCond_FirstUseEver);
    ImGui::SetNextWindowSize(ImVec2(360.0f, 0.0f), ImGuiCond_FirstUseEver);
    ImGui::Begin("Polytope", nullptr, ImGuiWindowFlags_AlwaysAutoResize);
    ImGui::TextUnformatted(input.source.c_str());
    if (input.frame != nullptr)
    {
        ImGui::Text("tick %llu   bodies %zu   draw calls %d",
                    static_cast<unsigned long long>(input.frame->tick), input.frame->bodies.size(),
                    input.drawCalls);
    }
    ImGui::Text("%.1f frames/s", input.fps);
    if (input.stats.interpolationDelayMs >= 0.0)
    {
        ImGui::Text("interpolation delay %.1f ms", input.stats.interpolationDelayMs);
    }
    if (input.stats.lossPercent >= 0.0)
    {
        ImGui::Text("received loss %.1f %%%s", input.stats.lossPercent,
                    input.stats.extrapolating ? "   extrapolating" : "");
    }
    if (input.canPause)
    {
        bool paused = input.paused;
        if (ImGui::Checkbox("paused", &paused))
        {
            state.pauseRequested = true;
        }
    }
    if (input.frame != nullptr && !input.frame->joints.empty())
    {
        ImGui::Checkbox("Joints", &state.showJoints);
        ImGui::SameLine();
        ImGui::TextDisabled("%zu: anchors, x axes (A red, B blue)", input.frame->joints.size());
    }
    ImGui::Separator();
    state.frameMs.plot("frame", "ms");
    state.snapshotRate.plot("snapshots", "/s");
    state.jitterMs.plot("jitter", "ms");
    state.kbps.plot("received", "kbit/s");
    state.rttMs.plot("RTT", "ms");
    state.stepMs.plot("step", "ms");
    ImGui::Separator();
    ImGui::TextDisabled("left drag: orbit  right/middle drag: pan");
    ImGui::TextDisabled("wheel: zoom  click: select  F: frame all");
    ImGui::End();

    if (input.selected != nullptr)
    {
        const ViewBody& b = *input.selected;
        ImGui::SetNextWindowPos(ImVec2(10.0f, 470.0f), ImGuiCond_FirstUseEver);
        ImGui::SetNextWindowSize(ImVec2(400.0f, 0.0f), ImGuiCond_FirstUseEver);
        ImGui::Begin("Body", nullptr, ImGuiWindowFlags_AlwaysAutoResize);
        ImGui::Text("id %u  generation %u", b.id, b.generation);
        ImGui::Text("shape %s%s  %s", shapeName(b.shape),
                    b.shape == ShapeKind::Hull && b.hullIndex < 0 ? " (its bounding box shown)" : "",
                    b.atRest ? "at rest" : "moving");
        row3("extent m", b.extent);
        row3("position m", b.position);
        ImGui::Text("%-12s %8.3f %8.3f %8.3f %8.3f", "orientation", static_cast<double>(b.orientation[0]),
                    static_cast<double>(b.orientation[1]), static_cast<double>(b.orientation[2]),
                    static_cast<double>(b.orientation[3]));
        if (b.hasVelocity)
        {
            row3("velocity m/s", b.linearVelocity);
            row3("spin rad/s", b.angularVelocity);
            ImGui::Text("%-12s %8.3f", "mass kg", static_cast<double>(b.mass));
        }
        ImGui::End();
    }
}

} // namespace polytope::viewer
