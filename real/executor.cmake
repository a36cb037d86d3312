# real/executor.cmake: the MPI side of real/ (included at the end of real/CMakeLists.txt).
# cnnpar_real_mpi = checked MPI wrappers, clock alignment, Schedule interpreter, calibration;
# cnnpar-run = the executable mpiexec starts. Never linked into `cnnpar` (SimGrid exports
# MPI_* symbols, so MPICH and SimGrid cannot share a process).
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(Threads REQUIRED)

add_library(cnnpar_real_mpi STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/mpi_wrap.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/clock_sync.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/interpreter.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/calibrate.cpp)
target_link_libraries(cnnpar_real_mpi PUBLIC
  cnnpar_settings cnnpar_model cnnpar_real_core MPI::MPI_CXX Threads::Threads fmt::fmt PRIVATE cnnpar_library_settings)

add_executable(cnnpar-run ${CMAKE_CURRENT_SOURCE_DIR}/cnnpar_run.cpp)
target_link_libraries(cnnpar-run PRIVATE cnnpar_real_mpi cnnpar_analysis cnnpar_strategy_flags CLI11::CLI11)
# Beside `cnnpar` when the cli puts it in the binary root; `cnnpar run` also looks in real/.
set_target_properties(cnnpar-run PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
