// Polytope physics: the constraint graph, which colours contact constraints for the wide solver.
//
// Rationale (after Box2D v3's constraint_graph.c; written afresh). The wide solver (contact_solver_wide.cpp)
// solves W constraints at once, one per SIMD lane, so the W constraints of a bundle must not share a body
// that moves: otherwise two lanes would read the same velocity and the second write would lose the first's
// impulse. Colouring gives that: each step the constraints are given, greedily and in constraint order,
// the first of kGraphColorCount colours in which neither of their dynamic bodies appears yet. Constraints
// of one colour touch disjoint bodies, so solving them in any order, or all at once, gives the same bits.
// - The static dummy (solver index 0) stands for every static body and never moves: it does not conflict.
// - A constraint that fits no colour goes to the overflow set, which the scalar solver handles after the
//   colours, in constraint order.
// - The colouring reads only body indices and order, never the lane count W, so SSE2 and AVX2 builds
//   solve in the same order and agree bit for bit.
// - Each body keeps a mask of the colours that hold it, so a constraint finds its colour in one lookup per
//   body (the lowest bit free in both masks; the highest for one against a static body).
// - Storage (body masks, colour lists and the packed bundles) is reserved at creation: no allocation in a
//   warm step.
#pragma once

#include "polytope/physics/contact_solver.h"
#include "polytope/physics/task_pool.h"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace polytope::physics
{

/// Colours per step. More colours fit more constraints around busy bodies (a box in a pile touches up to
/// a dozen others) at the cost of more, partly filled bundles.
inline constexpr int kGraphColorCount = 16;

/// The colouring of one step's contact constraints and their packing into wide bundles.
struct ConstraintGraph
{
    /// Reserves room for `bodies` solver bodies (the dummy included) and `constraints` constraints.
    void reserve(std::size_t bodies, std::size_t constraints);

    /// Colours `constraints` over `bodyCount` solver bodies (dummy included): fills colorStart and order.
    /// `parts`: the threads that will share each colour (see `order`).
    void color(std::span<const ContactConstraintSetup> constraints, std::size_t bodyCount, int parts = 1);

    /// Constraint indices grouped by colour (then the overflow set). Within a colour: cut into `parts`
    /// equal runs in constraint order (the task pool gives thread t the t-th run of every colour's blocks,
    /// so a thread keeps to the same constraints, and thus mostly the same bodies, colour after colour);
    /// within a run by point count (most first, so that bundles hold alike constraints), then constraint
    /// order. The overflow set in constraint order.
    std::vector<std::uint32_t> order;
    /// order[colorStart[c] .. colorStart[c + 1]) is colour c; c == kGraphColorCount: the overflow set.
    std::uint32_t colorStart[kGraphColorCount + 2] = {};
    std::vector<std::uint16_t>
        bodyColors; ///< per solver body: bit c set when colour c holds one of its constraints
    std::vector<std::uint8_t> colorOf;    ///< per constraint: its colour (kGraphColorCount: overflow)
    std::vector<std::uint32_t> sortSlots; ///< color()'s counting sort: per (colour, run, point count)

    // The wide bundles, laid out by contact_solver_wide.cpp (see there).
    std::vector<float> bundleValues;         ///< structure-of-arrays floats of every bundle
    std::vector<std::uint32_t> bundleBodies; ///< per bundle: W A indices then W B indices
    std::vector<std::uint32_t> bundleLanes;  ///< per bundle: W constraint indices (kEmptyLane: none)
    std::vector<std::uint8_t> bundlePoints;  ///< per bundle: the most points of any of its lanes
    std::vector<std::uint32_t> bundleFirst;  ///< per bundle: index into `order` of its lane 0
    /// The blocks of bundles the passes hand out (first bundle, end), thread by thread: thread t's run of
    /// every colour in turn, so that the once-a-step passes (preparing, reading back) give a thread the
    /// bundles it solves.
    std::vector<std::uint32_t> blockBundles;
    std::uint32_t bundleCount = 0;
    /// Bundles of colour c: [colorBundleStart[c], colorBundleStart[c + 1]).
    std::uint32_t colorBundleStart[kGraphColorCount + 1] = {};

    // The overflow set, solved by the scalar functions: its constraints prepared, in overflow() order.
    std::vector<ContactConstraint> overflowConstraints;
    std::vector<std::uint32_t> overflowSequence; ///< 0, 1, ..., n - 1: the index list the scalar calls take

    /// Indices (into the colored constraints) of the overflow set, in constraint order.
    std::span<const std::uint32_t> overflow() const
    {
        return std::span<const std::uint32_t>(order).subspan(
            colorStart[kGraphColorCount], colorStart[kGraphColorCount + 1] - colorStart[kGraphColorCount]);
    }
};

inline constexpr std::uint32_t kEmptyLane = 0xFFFFFFFFu;

/// SIMD lanes of the wide contact solver in this build: 8 (AVX2) or 4 (SSE2, or portable scalar).
int contactSolverLanes();

/// Reserves the bundle storage for up to `constraints` constraints.
void reserveContactBundles(ConstraintGraph& graph, std::size_t constraints);

// Each of the following runs on the pool's threads when `tasks` is not null (bundles of one colour share no
// moving body, so they run at once; colours run one after another) and gives the same bits on any number
// of threads. With a null pool it runs on the caller alone.

/// Prepares the coloured `constraints` (the ones color() was given) straight into the wide bundles, colour
/// by colour, and the overflow set into graph.overflowConstraints.
void prepareContactBundles(ConstraintGraph& graph, std::span<const ContactConstraintSetup> constraints,
                           std::span<const SolverBody> bodies, std::span<const SolverBodyMass> masses,
                           TaskPool* tasks);

/// warmStartContacts over the bundles, then the overflow set.
void warmStartContactsWide(ConstraintGraph& graph, std::span<SolverBody> bodies, TaskPool* tasks);

/// solveContacts over the bundles colour by colour, then the overflow set (scalar, constraint order).
void solveContactsWide(ConstraintGraph& graph, std::span<SolverBody> bodies, float inverseH,
                       float pushoutVelocity, float linearSlop, bool useBias, TaskPool* tasks);

/// applyRestitution over the bundles colour by colour, then the overflow set.
void applyRestitutionWide(ConstraintGraph& graph, std::span<SolverBody> bodies, float threshold,
                          TaskPool* tasks);

// The same passes for a caller that schedules the colours itself (World's staged solver, which runs all the
// passes of a substep level in one job of the pool): a pass is, for each colour, its blocks (any order, at
// once), then the overflow part; the parts one after another in that order.
/// The four passes over the bundles.
enum class ContactPass : std::uint8_t
{
    WarmStart,
    Solve,     ///< solveContacts with the soft bias
    Relax,     ///< solveContacts without it
    Restitute, ///< applyRestitution
};
/// What the passes read: Solve and Relax the first three, Restitute the threshold.
struct ContactPassParams
{
    float inverseH = 0.0f;
    float pushoutVelocity = 0.0f;
    float linearSlop = 0.0f;
    float restitutionThreshold = 0.0f;
};
/// Blocks of colour `color` (a few bundles each).
std::uint32_t contactPassBlocks(const ConstraintGraph& graph, int color);
/// `pass` over block `block` of colour `color`.
void runContactPassBlock(ConstraintGraph& graph, ContactPass pass, std::span<SolverBody> bodies,
                         const ContactPassParams& params, int color, std::uint32_t block);
/// `pass` over bundles [begin, end).
void runContactBundles(ConstraintGraph& graph, ContactPass pass, std::span<SolverBody> bodies,
                       const ContactPassParams& params, std::uint32_t begin, std::uint32_t end);
/// The end of `pass`, after every colour: the static dummy reset to zero, then the overflow set (scalar,
/// constraint order).
void runContactOverflow(ConstraintGraph& graph, ContactPass pass, std::span<SolverBody> bodies,
                        const ContactPassParams& params);
/// The impulses each constraint ends with: impulses[i] for constraint i of those color() was given.
void readContactImpulses(const ConstraintGraph& graph, std::span<ContactImpulses> impulses, TaskPool* tasks);

} // namespace polytope::physics
