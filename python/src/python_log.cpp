#include "python_log.h"

#include <nanobind/nanobind.h>
#include <nanobind/stl/string_view.h>

namespace gattn::python {

namespace nb = nanobind;

namespace {
class PythonLog : public LogSink {
 public:
  void write(LogLevel level, std::string_view message) override {
    nb::gil_scoped_acquire held;
    const nb::object logger = nb::module_::import_("logging").attr("getLogger")("gattn");
    logger.attr(level == LogLevel::note ? "warning" : "info")(message);
  }
};
}  // namespace

LogSink& python_log() {
  static PythonLog log;
  return log;
}

}  // namespace gattn::python
