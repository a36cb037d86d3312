#pragma once
// Records for hand-built Traces in the analysis tests (times in seconds).
#include <string>

#include "model/trace.hpp"

namespace cnnpar::test {

inline ComputeRecord op(int index, const std::string& label, int layer, Phase phase, double start_s, double end_s) {
  ComputeRecord r;
  r.op = index;
  r.label = label;
  r.layer = layer;
  r.phase = phase;
  r.start_s = start_s;
  r.end_s = end_s;
  return r;
}

inline CollectiveRecord coll(int id, int iteration, double posted_s, double start_s, double end_s, double wait_start_s,
                             double wait_end_s, double bytes = 1000) {
  CollectiveRecord r;
  r.collective = id;
  r.label = "c" + std::to_string(id);
  r.iteration = iteration;
  r.bytes = bytes;
  r.posted_s = posted_s;
  r.comm_start_s = start_s;
  r.comm_end_s = end_s;
  r.wait_start_s = wait_start_s;
  r.wait_end_s = wait_end_s;
  return r;
}

}  // namespace cnnpar::test
