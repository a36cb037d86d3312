// The SimGrid engine as a module that cnnpar loads when a command asks for it
// (engines/registry.cpp): libsimgrid and the ns-3 libraries behind it cost more process
// start-up than a whole analytic sweep, which should not pay for them. The model, system and
// base code it calls come from the executable that loads it.
#include "sim/simgrid/simgrid_engine.hpp"

extern "C" cnnpar::Engine* cnnpar_make_simgrid_engine(const cnnpar::SimgridOptions* options) {
  return cnnpar::make_simgrid_engine(*options).release();
}
