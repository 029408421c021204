// Issue 36's overlap figure, paired within one run: 2 ranks (started by mpirun, e.g. through
// scripts/two_hosts_mpirun.sh) take optimizer steps of `batch` x 256 tokens each (grad_accum 2:
// one micro-batch per rank, fp32, one thread, no ZeRO-1: the gradients are all-reduced) on a
// model config, the reduction overlapped with the backward pass and after it in ABBA order, so
// drift and noise fall on both alike. Per step: the step's seconds, its wait for the reduction
// after the backward pass (the whole all-reduce when sequential: T_comm), the process's CPU
// seconds (getrusage: user + system) and the machine's idle share (/proc/stat). Rank 0 prints
// the medians of each mode over the steps after the first two, the hidden fraction
// (T_seq - T_ovl) / T_comm of the medians, and the mean and sd of the per-pair differences.
// Then the all-reduce alone, 5 times: the whole gradient handed to the overlapped reduction at once
// and its end awaited, nothing computing (its thread sleeps between polls, unlike MPI's blocking
// waits, which spin): wall seconds, the rank's CPU seconds and the machine's idle share, what the
// transfer itself costs the cores. The per-op profile of the gap: each op's mean wall seconds per
// step in either mode (the ops of the forward and backward pass, timed by the pass's OpProfile;
// "other" is the rest of the step: the wait, the clipping and the update), and the CPU seconds of
// the rank's threads beside the one computing (the exchange thread; OpenMPI's own).
//   mpirun -np 2 ... gattn_bench_overlap_step CONFIG [BATCH=1] [STEPS=22]
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "io/checkpoint.h"
#include "model/train_state.h"
#include "model/weights.h"
#include "train/adamw.h"
#include "train/mpi_communicator.h"
#include "train/step.h"
#include "util/error.h"
#include "util/log.h"
#include "util/op_profile.h"
#include "util/threads.h"

namespace {

using namespace gattn;

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto s = [](timeval t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  return s(u.ru_utime) + s(u.ru_stime);
}

// The machine's (idle, total) jiffies so far: /proc/stat's first line.
std::pair<double, double> machine_jiffies() {
  std::ifstream stat("/proc/stat");
  std::string cpu;
  stat >> cpu;
  double idle = 0, total = 0, v = 0;
  for (int i = 0; i < 8 && stat >> v; ++i) {
    total += v;
    if (i == 3 || i == 4) idle += v;  // idle, iowait
  }
  return {idle, total};
}

// CPU seconds (user + system) of this process's threads other than the calling one, those that
// have ended included: the process's less the calling thread's.
double other_threads_cpu_seconds() {
  rusage self{}, thread{};
  getrusage(RUSAGE_SELF, &self);
  getrusage(RUSAGE_THREAD, &thread);
  auto s = [](timeval t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
  return s(self.ru_utime) + s(self.ru_stime) - s(thread.ru_utime) - s(thread.ru_stime);
}

// Per-op wall seconds summed over the steps of one mode.
struct OpTotals {
  std::vector<std::pair<std::string, double>> ops;
  int steps = 0;
  void add(const OpProfile& profile, double step_seconds) {
    double timed = 0;
    for (const auto& [op, seconds] : profile.totals()) {
      add_op(op, seconds);
      timed += seconds;
    }
    add_op("other", step_seconds - timed);
    ++steps;
  }
  void add_op(const std::string& op, double seconds) {
    for (auto& [name, total] : ops)
      if (name == op) return void(total += seconds);
    ops.emplace_back(op, seconds);
  }
  double mean(const std::string& op) const {
    for (const auto& [name, total] : ops)
      if (name == op) return total / std::max(1, steps);
    return 0;
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Sample {
  double seconds, wait, cpu, idle, other_threads_cpu;
};

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2) {
    std::fprintf(stderr, "usage: gattn_bench_overlap_step CONFIG [BATCH] [STEPS]\n");
    return 2;
  }
  const int batch = argc > 2 ? std::atoi(argv[2]) : 1;
  const int steps = argc > 3 ? std::max(6, std::atoi(argv[3])) : 22;
  const int seq = 256;
  auto comm = mpi_communicator(discard_log());
  if (comm->world() != 2) fail("run it as 2 ranks");
  const ThreadScope threads(1);
  Weights w(load_config(argv[1]));
  w.init(1);
  TrainState state(w);
  OpProfile profile;
  state.set_exec({.profile = &profile, .threads = 1});
  AdamW optimizer(w.layout(), AdamWOptions{});
  std::mt19937_64 rng(3);
  const size_t tokens = size_t(2 * batch * seq);
  std::vector<int32_t> ids(tokens), targets(tokens);
  std::vector<Sample> overlapped, sequential;
  OpTotals overlapped_ops, sequential_ops;
  for (int step = 0; step < steps; ++step) {
    for (size_t i = 0; i < tokens; ++i)
      ids[i] = int32_t(rng() % 8000), targets[i] = int32_t(rng() % 8000);
    const bool overlap = step % 4 == 0 || step % 4 == 3;  // ABBA
    const auto [idle0, total0] = machine_jiffies();
    const double cpu0 = cpu_seconds(), others0 = other_threads_cpu_seconds();
    profile.clear();
    const auto t0 = std::chrono::steady_clock::now();
    const StepResult r =
        optimizer_step(w, state, optimizer, {ids.data(), targets.data(), 2, batch, seq}, 1e-4, 1.0,
                       {}, *comm, overlap);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = cpu_seconds() - cpu0;
    const auto [idle1, total1] = machine_jiffies();
    const Sample s{seconds, r.reduction_wait_s, cpu,
                   (idle1 - idle0) / std::max(1.0, total1 - total0),
                   other_threads_cpu_seconds() - others0};
    if (step >= 2) {
      (overlap ? overlapped : sequential).push_back(s);
      (overlap ? overlapped_ops : sequential_ops).add(profile, seconds);
    }
    if (comm->rank() == 0)
      std::printf("step %2d %-10s %.3f s, wait %.3f s, cpu %.3f s, machine idle %.0f%%\n", step,
                  overlap ? "overlapped" : "sequential", s.seconds, s.wait, s.cpu, 100 * s.idle);
  }
  auto med = [](const std::vector<Sample>& v, double Sample::*f) {
    std::vector<double> x;
    for (const Sample& s : v) x.push_back(s.*f);
    return median(x);
  };
  const double t_ovl = med(overlapped, &Sample::seconds), t_seq = med(sequential, &Sample::seconds);
  const double t_comm = med(sequential, &Sample::wait);
  std::vector<double> diffs;  // sequential - overlapped, per pair of neighbouring steps
  for (size_t i = 0; i < std::min(overlapped.size(), sequential.size()); ++i)
    diffs.push_back(sequential[i].seconds - overlapped[i].seconds);
  double mean = 0, sd = 0;
  for (double d : diffs) mean += d / double(diffs.size());
  for (double d : diffs)
    sd += (d - mean) * (d - mean) / double(std::max<size_t>(1, diffs.size() - 1));
  sd = std::sqrt(sd);
  if (comm->rank() == 0) {
    std::printf(
        "medians over %zu + %zu steps (rank 0): overlapped %.3f s (wait %.3f s, cpu %.3f s, "
        "idle %.0f%%), sequential %.3f s (T_comm %.3f s, cpu %.3f s, idle %.0f%%)\n",
        overlapped.size(), sequential.size(), t_ovl, med(overlapped, &Sample::wait),
        med(overlapped, &Sample::cpu), 100 * med(overlapped, &Sample::idle), t_seq, t_comm,
        med(sequential, &Sample::cpu), 100 * med(sequential, &Sample::idle));
    std::printf(
        "hidden (T_seq - T_ovl) / T_comm = %.2f; per pair: mean %.3f s, sd %.3f s, n %zu "
        "(mean / T_comm %.2f)\n",
        (t_seq - t_ovl) / t_comm, mean, sd, diffs.size(), mean / t_comm);
    std::printf("per op, mean seconds a step (rank 0): %-28s %10s %10s %10s\n", "op", "overlapped",
                "sequential", "difference");
    for (const auto& [op, total] : sequential_ops.ops) {
      const double o = overlapped_ops.mean(op), q = sequential_ops.mean(op);
      std::printf("per op, mean seconds a step (rank 0): %-28s %10.4f %10.4f %+10.4f\n", op.c_str(),
                  o, q, o - q);
    }
    std::printf(
        "CPU seconds a step of rank 0's other threads (exchange, OpenMPI): overlapped %.3f, "
        "sequential %.3f (medians)\n",
        med(overlapped, &Sample::other_threads_cpu), med(sequential, &Sample::other_threads_cpu));
  }
  for (int rep = 0; rep < 5; ++rep) {
    Gradients& g = state.grads();
    comm->barrier();
    const auto [idle0, total0] = machine_jiffies();
    const double cpu0 = cpu_seconds(), others0 = other_threads_cpu_seconds();
    const auto t0 = std::chrono::steady_clock::now();
    const auto reduction = comm->start_reduction(g.data(), g.size(), true);
    reduction->ready({{0, g.size()}});
    reduction->finish();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = cpu_seconds() - cpu0;
    const auto [idle1, total1] = machine_jiffies();
    if (comm->rank() == 0)
      std::printf(
          "all-reduce alone: %.3f s, rank 0's cpu %.3f s (its other threads %.3f s), machine idle "
          "%.0f%%\n",
          seconds, cpu, other_threads_cpu_seconds() - others0,
          100 * (idle1 - idle0) / std::max(1.0, total1 - total0));
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "gattn_bench_overlap_step: %s\n", e.what());
  abort_all_ranks(1);
}
