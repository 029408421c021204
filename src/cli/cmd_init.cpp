// gattn init: a freshly initialised model written as a checkpoint folder.
#include <cstdio>

#include "cli/commands.h"
#include "io/checkpoint.h"
#include "model/weights.h"

namespace gattn {

void add_init_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "init", "Initialise a model and save it (config.json + model.safetensors)");
  static std::string config_path, out;
  static uint64_t seed = 0;
  static std::string gate;
  cmd->add_option("--config", config_path, "model config JSON")->required();
  cmd->add_option("--gate", gate,
                  "gate object replacing the config's, e.g. '{\"position\": \"value\"}'");
  cmd->add_option("--out", out, "output folder")->required();
  cmd->add_option("--seed", seed, "initialisation seed");
  static bool force = false;
  cmd->add_flag("--force", force, "replace a folder that is not empty (as a whole, atomically)");
  cmd->callback([] {
    const ExistingFolder existing = force ? ExistingFolder::replace : ExistingFolder::refuse;
    check_output_folder(out, existing, "--out");
    Weights weights(load_config(config_path, gate));
    weights.init(seed);
    save_model(out, weights, existing);
    std::printf("wrote %s/config.json and %s/model.safetensors\n", out.c_str(), out.c_str());
  });
}

}  // namespace gattn
