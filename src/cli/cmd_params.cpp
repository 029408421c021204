// gattn params: the parameter table of a config, counted without allocating.
#include "cli/commands.h"
#include "cli/format.h"
#include "io/checkpoint.h"

namespace gattn {

void add_params_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("params", "Print the parameter table of a config");
  static std::string config_path;
  static bool per_tensor = false;
  static std::string gate;
  cmd->add_option("--config", config_path, "model config JSON")->required();
  cmd->add_option("--gate", gate,
                  "gate object replacing the config's, e.g. '{\"position\": \"value\"}'");
  cmd->add_flag("--tensors", per_tensor, "list every tensor");
  cmd->callback([] { print_parameter_table(load_config(config_path, gate), per_tensor); });
}

}  // namespace gattn
