// A folder written as a whole: its files go into a sibling staging folder <target>.tmp.<pid> on
// the same file system, which is then renamed into place (or, replacing a folder, exchanged with it
// by renameat2(RENAME_EXCHANGE) and the old one deleted). A reader of <target> sees exactly the
// old folder or exactly the new one at every moment, whatever fails or kills the writer.
#pragma once
#include <string>

namespace gattn {

enum class ExistingFolder { refuse, replace };

// The checks a command makes before it writes anything: `target` is not empty, not a file or under
// a file, and, unless `existing` is replace, not a folder with something in it. Errors name it.
void check_output_folder(const std::string& target, ExistingFolder existing, const char* flag);

// An Error naming both paths when `target` is `source`, lies inside it or contains it (compared
// after weakly_canonical and by device and inode, so links and bind mounts do not hide it).
void check_output_apart_from_source(const std::string& source, const std::string& target);

class StagedFolder {
 public:
  // Creates the staging folder (and target's parent folders); a stale one of this pid is removed.
  StagedFolder(const std::string& target, ExistingFolder existing, const char* flag = "--out");
  ~StagedFolder();  // removes the staging folder unless published
  StagedFolder(const StagedFolder&) = delete;
  StagedFolder& operator=(const StagedFolder&) = delete;

  const std::string& path() const { return staging_; }  // where the files go
  std::string file(const std::string& name) const { return staging_ + "/" + name; }
  // Syncs the staging folder, puts it in place and syncs the parent; a replaced folder is deleted.
  void publish();

 private:
  std::string target_, staging_;
  ExistingFolder existing_;
  bool published_ = false;
};

}  // namespace gattn
