// The engine's messages (util/log.h) in Python's `logging`, logger "gattn": progress and info
// lines at INFO, notes at WARNING. Only for calls that hold the GIL (loading, not passes).
#pragma once
#include "util/log.h"

namespace gattn::python {

LogSink& python_log();

}  // namespace gattn::python
