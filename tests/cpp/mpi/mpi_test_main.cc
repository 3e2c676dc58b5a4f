// GoogleTest main for tests run under mpiexec: every rank runs every test;
// only rank 0 prints progress, and any rank's failure fails the job.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>

#include "tests_runtime.h"

namespace flock::testing {

// On ranks other than 0 only failures are printed, tagged with the rank.
class FailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit FailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: Failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }

 private:
  int rank_;
};

std::unique_ptr<Runtime>& SharedRuntime() {
  static std::unique_ptr<Runtime> runtime;
  return runtime;
}

}  // namespace flock::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  auto config = flock::Config::FromEnvironment();
  if (!config.ok()) return 2;
  auto runtime = flock::Runtime::Create(config.value());
  if (!runtime.ok()) {
    std::fprintf(stderr, "runtime: %s\n", runtime.status().ToString().c_str());
    return 2;
  }
  flock::testing::SharedRuntime() = std::move(runtime).value();
  if (flock::testing::SharedRuntime()->rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new flock::testing::FailurePrinter(flock::testing::SharedRuntime()->rank()));
  }
  const int result = RUN_ALL_TESTS();
  flock::testing::SharedRuntime().reset();
  flock::FinalizeTransports();
  return result;
}
