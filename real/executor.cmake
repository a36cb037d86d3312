# real/executor.cmake: the MPI side of real/ (included at the end of real/CMakeLists.txt).
# cnnpar_real_mpi = checked MPI wrappers, clock alignment, Schedule interpreter, calibration.
# Linked only into cnnpar-run (apps/cnnpar-run), never into `cnnpar` (SimGrid exports MPI_*
# symbols, so MPICH and SimGrid cannot share a process).
find_package(MPI REQUIRED COMPONENTS CXX)
find_package(Threads REQUIRED)

add_library(cnnpar_real_mpi STATIC
  ${CMAKE_CURRENT_SOURCE_DIR}/mpi_wrap.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/clock_sync.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/interpreter.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/serve_loop.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/calibrate.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/calibrate_compute.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/calibrate_inner.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/calibrate_network.cpp
  ${CMAKE_CURRENT_SOURCE_DIR}/calibrate_progress.cpp)
cnnpar_layer(cnnpar_real_mpi)
target_link_libraries(cnnpar_real_mpi PUBLIC cnnpar_real_core MPI::MPI_CXX Threads::Threads PRIVATE cnnpar_library_settings)

