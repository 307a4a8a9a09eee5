#pragma once
/// ModelDirLock: how one job owns a model_dir for writing. The training chief holds an
/// advisory lock, flock(2), on `<model_dir>/.torch_estimator.lock` while it trains; a second
/// job's chief (another est-launch group, a lone est-train) is refused at start with a
/// ConfigError naming the owner. The kernel releases the lock when its owner exits or dies,
/// so a crashed job never blocks its own restart. The evaluator takes no lock.
///
/// On NFS, Linux implements flock with the server's byte-range locks (NFSv4, or NFSv3 with
/// the lock manager), so jobs on different hosts exclude each other; a mount with `nolock`
/// keeps locks local to each host, and jobs on two hosts are then not refused. A file
/// system that refuses locks (ENOLCK, EOPNOTSUPP) gets a warning and no lock.

#include <string>

namespace est {

/// The lock file's name in model_dir.
inline constexpr char kModelDirLockName[] = ".torch_estimator.lock";

/// The lock of one model_dir, held from construction until destruction. Not copyable.
class ModelDirLock {
 public:
  /// Takes the lock and writes this process's host, pid, job (EST_JOB_ID, when set) and the
  /// time into the lock file. Throws ConfigError naming the owner when another process (or
  /// another ModelDirLock of this one) holds it, and IoError when the file cannot be opened.
  explicit ModelDirLock(const std::string& model_dir);
  ~ModelDirLock();
  ModelDirLock(const ModelDirLock&) = delete;
  ModelDirLock& operator=(const ModelDirLock&) = delete;

  /// Whether the lock is held (false where the file system refuses locks).
  bool held() const { return held_; }

 private:
  int fd_ = -1;
  bool held_ = false;
};

}  // namespace est
