// The subcommands of the `gattn` binary: each adds itself to the CLI11 app.
#pragma once
#include <CLI/CLI.hpp>

namespace gattn {

void add_params_command(CLI::App& app);
void add_bench_command(CLI::App& app);
void add_init_command(CLI::App& app);
void add_tokenizer_command(CLI::App& app);
void add_corpus_command(CLI::App& app);
void add_train_command(CLI::App& app);
void add_data_command(CLI::App& app);
void add_eval_command(CLI::App& app);
void add_compare_command(CLI::App& app);
void add_analyze_command(CLI::App& app);
void add_synthetic_command(CLI::App& app);
void add_passkey_command(CLI::App& app);
void add_generate_command(CLI::App& app);
void add_export_command(CLI::App& app);
void add_quantize_command(CLI::App& app);
void add_serve_command(CLI::App& app);
void add_chat_template_command(CLI::App& app);

}  // namespace gattn
