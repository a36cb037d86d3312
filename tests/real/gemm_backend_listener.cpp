// Runs every test of the executable with the GEMM back-end that CNNPAR_TEST_GEMM names
// (tests/real/CMakeLists.txt registers the numerics tests once more per extra back-end).
// Unset: the default, OpenBLAS.
#define CATCH_CONFIG_EXTERNAL_INTERFACES
#include <catch2/catch.hpp>

#include <cstdlib>

#include "real/kernels.hpp"

namespace {

struct GemmBackendListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testRunStarting(const Catch::TestRunInfo& info) override {
    TestEventListenerBase::testRunStarting(info);
    const char* name = std::getenv("CNNPAR_TEST_GEMM");
    if (name != nullptr && *name != '\0')
      cnnpar::real::set_gemm_backend(cnnpar::real::parse_gemm_backend(name, "environment", "/CNNPAR_TEST_GEMM"));
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(GemmBackendListener)
