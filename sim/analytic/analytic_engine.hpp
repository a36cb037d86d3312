#pragma once
// The analytic back-end: an event-driven replay of a Schedule on a Platform with
// closed-form collective times (collective_cost.hpp) and roofline/calibrated compute
// times (system/op_time.hpp).
//
// Per rank: one compute stream in program order; one communication engine running posted
// collectives in posting order, `collective_concurrency` at a time. A rank's engine joins a
// collective when it reaches it (comm_start); the collective starts when every member has
// joined (start = max over members), lasts its closed-form time and ends at the same time on
// every member (comm_end). `wait` blocks the compute stream until the end. While a rank's
// engine has a started, unfinished collective its compute runs 1 + comm_compute_slowdown
// times slower.
//
// Two replays with identical results:
//  * time-ordered: every compute op and collective end is an event in one heap; needed when
//    compute speed depends on communication (slow-down > 0) or concurrency > 1;
//  * run-ahead: otherwise every time is a max/plus of earlier times, so each rank runs its
//    compute ops inline until it blocks on a wait, and only collective ends go through the
//    heap. This is the fast path (tests compare it with the time-ordered replay).
// When every collective spans all ranks and the ranks fall into a few classes with the same
// program and speed (dp and lee: one class, two with an uneven batch split), one rank per
// class is replayed and its timeline copied to the rest: ranks of a class join every
// collective at the same moment, so this is exact, not an approximation.
#include <memory>

#include "model/engine.hpp"
#include "sim/analytic/replay_plan.hpp"

namespace cnnpar::analytic {

/** Replays `schedule` on `platform`.
 *  @throws InputError if the schedule has more ranks than the platform has nodes.
 *  @throws InternalError on a deadlock (naming the stuck ranks and collectives) or a
 *          malformed schedule that verify() would have rejected. */
Trace analytic_replay(const Schedule& schedule, const Platform& platform,
                      ReplayMode mode = ReplayMode::automatic);
/** The same before the rank classes are expanded (ClassedTrace): expand() gives analytic_replay's
 *  Trace. */
ClassedTrace analytic_replay_classed(const Schedule& schedule, const Platform& platform,
                                     ReplayMode mode = ReplayMode::automatic);
/** The same with a plan made by make_replay_plan(schedule, P, mode) on a platform P that
 *  differs from `platform` at most where ScheduleMemo allows, at the given detail. */
ClassedTrace analytic_replay_classed(const Schedule& schedule, const Platform& platform, const ReplayPlan& plan,
                                     ReplayMode mode, TraceDetail detail);

}  // namespace cnnpar::analytic

namespace cnnpar {
/** Engine "analytic" (see analytic_replay). */
std::unique_ptr<Engine> make_analytic_engine();
}  // namespace cnnpar
