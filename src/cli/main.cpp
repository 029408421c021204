// gattn: train, analyse and run decoder-only transformers with gated attention.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <new>
#include <string>
#include <system_error>

#include "cli/commands.h"
#include "io/file.h"
#include "util/cpu_isa.h"
#include "util/error.h"
#include "util/threads.h"

namespace {
// The test hooks a test sets in the environment of the gattn binary (io/file.h).
void arm_fault_injection() {
  if (const char* n = std::getenv("GATTN_FAULT_WRITE_ENOSPC"))
    gattn::inject_write_failure(std::atoll(n));
  if (const char* point = std::getenv("GATTN_FAULT_KILL_AT")) gattn::arm_kill_point(point);
}
}  // namespace

int main(int argc, char** argv) {
  // OpenBLAS fell back to a generic core on a CPU newer than it (util/threads.h): run again with
  // the core this CPU can run, from the binary's own path (so ps and pgrep still name it gattn).
  // Should exec fail, the generic core still computes correctly.
  if (const std::string core = gattn::blas_core_override(); !core.empty()) {
    std::error_code error;
    const std::string self = std::filesystem::read_symlink("/proc/self/exe", error).string();
    ::setenv("OPENBLAS_CORETYPE", core.c_str(), 1);
    if (!error) ::execv(self.c_str(), argv);
  }
  arm_fault_injection();
  CLI::App app{"gattn: decoder-only transformers with gated attention (Qiu et al. 2025)"};
  app.require_subcommand(1);
  gattn::add_params_command(app);
  gattn::add_bench_command(app);
  gattn::add_init_command(app);
  gattn::add_tokenizer_command(app);
  gattn::add_corpus_command(app);
  gattn::add_data_command(app);
  gattn::add_synthetic_command(app);
  gattn::add_train_command(app);
  gattn::add_eval_command(app);
  gattn::add_analyze_command(app);
  gattn::add_passkey_command(app);
  gattn::add_generate_command(app);
  gattn::add_compare_command(app);
  gattn::add_export_command(app);
  gattn::add_quantize_command(app);
  gattn::add_serve_command(app);
  gattn::add_chat_template_command(app);
  try {
    // GATTN_ISA, read once before any kernel runs (a bad value is exit 1 naming it).
    gattn::select_isa(gattn::isa_choice_from_environment());
    app.parse(argc, argv);
  } catch (const CLI::ValidationError& e) {  // a bad flag value: said like any other bad input
    std::fprintf(stderr, "gattn: error: %s\n", e.what());
    return 1;
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const gattn::Error& e) {
    std::fprintf(stderr, "gattn: error: %s\n", e.what());
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave that cannot be created, written or read: their error, named.
    std::fprintf(stderr, "gattn: error: %s%s%s: %s\n", e.path1().c_str(),
                 e.path2().empty() ? "" : " and ", e.path2().c_str(), e.code().message().c_str());
    return 1;
  } catch (const gattn::InternalError& e) {
    std::fprintf(stderr, "gattn: internal error (a bug in gattn): %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    // Sizes read from files are bounded by the files; a flag may still ask for too much.
    std::fprintf(stderr, "gattn: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gattn: internal error: %s\n", e.what());
    return 2;
  }
  // Results printed to a full disk or a closed pipe are an error too, not a silent exit 0.
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    std::fprintf(stderr, "gattn: error: writing standard output failed (%s)\n",
                 std::strerror(errno));
    return 1;
  }
  return 0;
}
