// GoogleTest main for tests run under mpiexec: every rank runs every test;
// only rank 0 prints progress, and a failed test on any rank ends the whole job
// at once (MPI_Abort), so the other ranks do not wait in its next collective
// until ctest's timeout.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

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

// Ends every rank of the job once a test (or a suite's set-up or tear-down) failed on
// this rank. GoogleTest calls the "end" events in the reverse order of the listeners,
// so this one goes before the printers: they have printed the failure when it runs.
class AbortOnFailure : public ::testing::EmptyTestEventListener {
 public:
  explicit AbortOnFailure(int rank) : rank_(rank) {}
  void OnTestEnd(const ::testing::TestInfo& test) override {
    if (test.result()->Failed()) {
      Abort(std::string(test.test_suite_name()) + "." + test.name());
    }
  }
  void OnTestSuiteEnd(const ::testing::TestSuite& suite) override {
    if (suite.ad_hoc_test_result().Failed()) {
      Abort(std::string(suite.name()) + " (set-up or tear-down)");
    }
  }

 private:
  void Abort(const std::string& what) const {
    std::fflush(stdout);
    std::fprintf(stderr, "[rank %d] FAILED %s; MPI_Abort ends every rank of the job\n", rank_,
                 what.c_str());
    std::fflush(stderr);
    SharedRuntime()->transport().Abort(1);
    std::_Exit(1);  // Abort does not return; should it, this rank still fails the job
  }

  int rank_;
};

std::unique_ptr<Runtime>& SharedRuntime() {
  static std::unique_ptr<Runtime> runtime;
  return runtime;
}

// Rank 0: AbortOnFailure, then GoogleTest's printer. Other ranks: AbortOnFailure, then
// FailurePrinter. A single rank keeps GoogleTest's behaviour: nothing waits for it.
void InstallListeners(int rank, int size) {
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  ::testing::TestEventListener* printer = listeners.Release(listeners.default_result_printer());
  if (size > 1) listeners.Append(new AbortOnFailure(rank));
  if (rank == 0) {
    listeners.Append(printer);
  } else {
    delete printer;
    listeners.Append(new FailurePrinter(rank));
  }
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
  flock::testing::InstallListeners(flock::testing::SharedRuntime()->rank(),
                                   flock::testing::SharedRuntime()->size());
  const int result = RUN_ALL_TESTS();
  flock::testing::SharedRuntime().reset();
  flock::FinalizeTransports();
  return result;
}
