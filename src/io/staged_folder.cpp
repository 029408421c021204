#include "io/staged_folder.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "io/file.h"
#include "util/error.h"

namespace gattn {

namespace {
namespace fs = std::filesystem;

struct Identity {
  dev_t device;
  ino_t inode;
  bool operator==(const Identity&) const = default;
};

bool identity_of(const fs::path& path, Identity& out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  out = {st.st_dev, st.st_ino};
  return true;
}

fs::path canonical_folder(const fs::path& path) {
  fs::path p = fs::weakly_canonical(fs::absolute(path)).lexically_normal();
  return p.has_filename() ? p : p.parent_path();
}

// True when `inner` is `outer` or lies inside it: by path after weakly_canonical, or by the
// identity of `inner` or one of its existing ancestors.
bool is_within(const fs::path& inner, const fs::path& outer) {
  const fs::path a = canonical_folder(inner), b = canonical_folder(outer);
  if (std::mismatch(b.begin(), b.end(), a.begin(), a.end()).first == b.end()) return true;
  Identity target;
  if (!identity_of(b, target)) return false;
  for (fs::path p = a; !p.empty(); p = p.parent_path()) {
    Identity here;
    if (identity_of(p, here) && here == target) return true;
    if (p == p.parent_path()) break;
  }
  return false;
}

void sync_folder(const fs::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) fail(folder.string(), ": cannot open to sync it (", std::strerror(errno), ")");
  const bool synced = ::fsync(fd) == 0 || errno == EINVAL;  // EINVAL: the fs cannot sync folders
  const std::string reason = std::strerror(errno);
  ::close(fd);
  if (!synced) fail(folder.string(), ": fsync failed (", reason, ")");
}

fs::path parent_of(const fs::path& target) {
  const fs::path absolute = fs::absolute(target).lexically_normal();
  return absolute.has_filename() ? absolute.parent_path() : absolute.parent_path().parent_path();
}

// The target without a trailing slash, so that "<target>.tmp.<pid>" is its sibling.
std::string without_trailing_slash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}
}  // namespace

void check_output_folder(const std::string& target, ExistingFolder existing, const char* flag) {
  if (target.empty()) fail(flag, " is empty: give the folder to write");
  const fs::path full = canonical_folder(target);
  for (fs::path p = full;; p = p.parent_path()) {
    std::error_code ec;
    const fs::file_type type = fs::status(p, ec).type();
    if (type == fs::file_type::directory) break;
    if (type != fs::file_type::not_found && type != fs::file_type::none)
      fail(flag, " ", target, ": ", p == full ? "it" : p.string(), " is a file, not a folder");
    if (p == p.parent_path()) break;
  }
  if (existing == ExistingFolder::replace || !fs::is_directory(target)) return;
  if (!fs::is_empty(target))
    fail(flag, " ", target, ": the folder is not empty; pass --force to replace it as a whole");
}

void check_output_apart_from_source(const std::string& source, const std::string& target) {
  if (is_within(target, source))
    fail("--out ", target, " is the source ", source,
         " or lies inside it: writing there would destroy the source; choose another folder");
  if (is_within(source, target))
    fail("--out ", target, " contains the source ", source,
         ": replacing it would destroy the source; choose another folder");
}

StagedFolder::StagedFolder(const std::string& target, ExistingFolder existing, const char* flag)
    : target_(without_trailing_slash(target)), existing_(existing) {
  check_output_folder(target, existing, flag);
  staging_ = target_ + ".tmp." + std::to_string(::getpid());
  std::error_code ec;
  fs::remove_all(staging_, ec);
  fs::create_directories(parent_of(target_), ec);
  if (ec) fail(flag, " ", target, ": cannot create its parent folder (", ec.message(), ")");
  if (::mkdir(staging_.c_str(), 0755) != 0)
    fail(staging_, ": cannot create the staging folder for ", target, " (", std::strerror(errno),
         ")");
}

StagedFolder::~StagedFolder() {
  std::error_code ec;
  if (!published_) fs::remove_all(staging_, ec);
}

void StagedFolder::publish() {
  sync_folder(staging_);
  kill_point("publish_before_rename");
  const bool replace =
      existing_ == ExistingFolder::replace && fs::is_directory(target_) && !fs::is_empty(target_);
  if (!replace) {
    // rename(2) also replaces an empty folder.
    if (::rename(staging_.c_str(), target_.c_str()) != 0)
      fail(target_, ": cannot rename ", staging_, " into place (", std::strerror(errno), ")");
    published_ = true;
    kill_point("publish_after_rename");
    sync_folder(parent_of(target_));
    return;
  }
  if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) != 0)
    fail(target_, ": cannot exchange it with ", staging_, " (", std::strerror(errno),
         "); this file system cannot replace a folder atomically: remove it first");
  kill_point("publish_after_rename");
  sync_folder(parent_of(target_));
  fs::remove_all(staging_);  // now the old folder
  published_ = true;
}

}  // namespace gattn
