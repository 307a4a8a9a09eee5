#pragma once
/// Crash points: fault injection for the reliability tests. A process that passes a
/// named point of its work (a step, a stage of a checkpoint write) kills itself with
/// SIGKILL, as a machine failure would, when the test has asked for it.

#include <cstdint>
#include <string_view>

namespace est {

/// When the environment variable EST_CRASH_POINTS_DIR names a directory that holds a file
/// named "<task>@<point>@<step>", removes that file and kills this process with SIGKILL;
/// a file "<task>@<point>@<n>+" does the same at the first pass of the point at a step of
/// at least n (for steps a task may skip, as a worker of an asynchronous job does).
/// <task> is the EST_TASK variable (est-launch sets it, e.g. "worker-1"), else "local".
/// Each file fires once, so a restarted job passes the same point again unharmed. Without
/// EST_CRASH_POINTS_DIR (the normal case) this is one branch on a cached flag.
void CrashPoint(std::string_view point, int64_t step);

}  // namespace est
