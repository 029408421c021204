#include "train.h"

#include <nanobind/stl/string.h>

#include <nlohmann/json.hpp>
#include <optional>

#include "python_log.h"
#include "train/run_config.h"
#include "train/trainer.h"

namespace gattn::python {

namespace {
nb::object python_value(const nlohmann::json& value) {
  return nb::module_::import_("json").attr("loads")(value.dump());
}
}  // namespace

nb::dict train(const TrainArgs& a, nb::handle callback) {
  RunConfig run = load_run_config(a.config, a.gate);
  if (!a.out.empty()) run.out = a.out;
  if (a.seed >= 0) run.seed = uint64_t(a.seed);
  if (!a.init_from.empty()) run.init_from = a.init_from;
  const std::vector<uint32_t> token_bytes = run_token_bytes(run);
  std::optional<nb::python_error> callback_error;
  TrainSession session = {.resume = a.resume,
                          .allow_config_change = a.allow_config_change,
                          .stop_at_step = a.stop_at_step};
  if (!callback.is_none())
    session.on_step = [&](const nlohmann::json& record) {
      nb::gil_scoped_acquire held;
      try {
        const nb::object go_on = callback(python_value(record));
        return go_on.is_none() || PyObject_IsTrue(go_on.ptr()) == 1;
      } catch (nb::python_error& error) {
        callback_error.emplace(std::move(error));
        return false;
      }
    };
  TrainOutcome outcome;
  {
    nb::gil_scoped_release released;
    outcome = gattn::train(run, session, token_bytes, python_log());
  }
  if (callback_error) {
    nb::python_error error = std::move(*callback_error);
    callback_error.reset();
    throw error;
  }
  if (outcome.stopped_by_signal) {
    PyErr_SetString(PyExc_KeyboardInterrupt, "gattn.train stopped; checkpoint written");
    throw nb::python_error();
  }
  nb::dict out;
  out["steps_done"] = outcome.steps_done;
  out["stopped_by_callback"] = outcome.stopped_by_callback;
  out["summary"] = python_value(outcome.summary);
  return out;
}

}  // namespace gattn::python
