// The fake NCCL across processes: ranks that are separate processes (as in an
// MPI job) find each other through the id alone. Each rank is a fresh
// flock_fake_nccl_rank process (spawned, so no fork of a threaded test).
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "fake_nccl_test_support.h"

extern char** environ;

namespace fake_nccl_test {
namespace {

std::string Hex(const ncclUniqueId& id) {
  std::string text;
  char byte[3];
  for (char c : id.internal) {
    std::snprintf(byte, sizeof(byte), "%02x", static_cast<unsigned char>(c));
    text += byte;
  }
  return text;
}

// This process's environment with a short NCCL timeout, for the ranks.
std::vector<std::string> RankEnvironment() {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "FAKE_NCCL_TIMEOUT_S=", 20) != 0) env.emplace_back(*e);
  }
  env.emplace_back("FAKE_NCCL_TIMEOUT_S=10");
  return env;
}

pid_t Spawn(std::vector<std::string> args, std::vector<std::string> env) {
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  for (std::string& e : env) envp.push_back(e.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  pid_t pid = -1;
  EXPECT_EQ(posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()), 0);
  return pid;
}

// The exit status, or -1 after killing a rank that ran past the deadline.
int WaitForExit(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(FakeNcclProcesses, RanksInSeparateProcesses) {
  for (int nranks : {2, 3, 4}) {
    ncclUniqueId id;
    ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    std::vector<pid_t> pids;
    for (int rank = 0; rank < nranks; ++rank) {
      pids.push_back(
          Spawn({FAKE_NCCL_RANK_EXE, Hex(id), std::to_string(rank), std::to_string(nranks)},
                RankEnvironment()));
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    for (int rank = 0; rank < nranks; ++rank)
      EXPECT_EQ(WaitForExit(pids[rank], deadline), 0) << "rank " << rank << " of " << nranks;
  }
}

}  // namespace
}  // namespace fake_nccl_test
