// gattn.train: a run config trained as `gattn train` trains it, with a Python callback after each
// step; the GIL is released while the run computes and taken around the callback and log lines.
#pragma once
#include <nanobind/nanobind.h>

#include <cstdint>
#include <string>

namespace gattn::python {

namespace nb = nanobind;

// `gattn train`'s flags, as gattn.train's keyword arguments.
struct TrainArgs {
  std::string config, out, gate, init_from;
  int64_t seed = -1;  // < 0: the config's
  bool resume = false, allow_config_change = false;
  int64_t stop_at_step = 0;
};

// Trains; returns {"steps_done", "stopped_by_callback", "summary"}. callback(record) (None: no
// callback) gets each step's metrics record as a dict; a False return ends the session after
// that step with a checkpoint. SIGINT (Ctrl-C) ends it at the next step boundary with a
// checkpoint and raises KeyboardInterrupt; an exception in the callback ends it likewise and is
// raised.
nb::dict train(const TrainArgs& args, nb::handle callback);

}  // namespace gattn::python
