#pragma once
// `cnnpar validate`: a grid of configurations (network × strategy × link × batch × ranks), each
// predicted by both engines from a calibrated platform and measured for real, on the testbed or
// on a cluster. These headers hold what needs no process: the grid file and its configurations
// (validation_grid.hpp), the diagnosis of a miss (validation_diagnosis.hpp), one
// configuration's result (validation_result.hpp), and the fidelity report over all results
// (validation_summary.hpp, written out by validation_render.hpp). Calibrating, launching and
// the testbed are the command's (apps/cnnpar/cmd_validate.cpp).
#include "experiments/validation_diagnosis.hpp"
#include "experiments/validation_grid.hpp"
#include "experiments/validation_render.hpp"
#include "experiments/validation_result.hpp"
#include "experiments/validation_summary.hpp"
