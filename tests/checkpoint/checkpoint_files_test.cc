#include "checkpoint/checkpoint_files.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "common/file_util.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/test_util.h"

using namespace est::checkpoint;
using est::testing::CountEntries;
using est::testing::FreshTempDir;

TEST_CASE("checkpoint files are named as TensorFlow names them", "[checkpoint]") {
  CHECK(CheckpointPrefix("/m", 938) == "/m/model.ckpt-938");
  CHECK(IndexPath("/m/model.ckpt-938") == "/m/model.ckpt-938.index");
  CHECK(DataPath("/m/model.ckpt-938") == "/m/model.ckpt-938.data-00000-of-00001");
}

TEST_CASE("SamePrefix compares normalized absolute paths", "[checkpoint]") {
  CHECK(SamePrefix("/m/model.ckpt-1", "/m//x/../model.ckpt-1"));
  CHECK(SamePrefix("rel/model.ckpt-1",
                   (std::filesystem::current_path() / "rel/model.ckpt-1").string()));
  CHECK_FALSE(SamePrefix("/m/model.ckpt-1", "/m/model.ckpt-10"));
}

TEST_CASE("RemoveCheckpointFiles removes both files and tolerates absent ones", "[checkpoint]") {
  auto dir = FreshTempDir("remove_files");
  const std::string prefix = CheckpointPrefix(dir.string(), 7);
  est::WriteFileAtomic(IndexPath(prefix), "i");
  est::WriteFileAtomic(DataPath(prefix), "d");
  est::WriteFileAtomic((dir / "other").string(), "o");
  CHECK(CheckpointExists(prefix));
  CHECK(RemoveCheckpointFiles(prefix));
  CHECK_FALSE(CheckpointExists(prefix));
  CHECK(CountEntries(dir) == 1);
  CHECK(RemoveCheckpointFiles(prefix));
}

TEST_CASE("CheckpointInDirectory resolves '..', absolute paths and symbolic links", "[checkpoint]") {
  namespace fs = std::filesystem;
  auto root = FreshTempDir("in_directory");
  const auto [dir, outside] = est::checkpoint::testing::MakeEscapeLayout(root);
  CHECK(CheckpointInDirectory(dir.string(), CheckpointPrefix(dir.string(), 5)));
  CHECK(CheckpointInDirectory(dir.string(), (dir / "sub" / ".." / "model.ckpt-5").string()));
  CHECK_FALSE(CheckpointInDirectory(dir.string(), (dir / ".." / "outside" / "model.ckpt-5").string()));
  CHECK_FALSE(CheckpointInDirectory(dir.string(), (outside / "model.ckpt-5").string()));
  CHECK_FALSE(CheckpointInDirectory(dir.string(), (dir / "sub" / "model.ckpt-5").string()));

  CHECK_FALSE(CheckpointInDirectory(dir.string(), (dir / "link" / "model.ckpt-5").string()));
  est::WriteFileAtomic((outside / "victim").string(), "outside");
  fs::create_symlink(outside / "victim", IndexPath((dir / "model.ckpt-6").string()));
  CHECK_FALSE(CheckpointInDirectory(dir.string(), (dir / "model.ckpt-6").string()));
  fs::create_symlink(outside / "victim", DataPath((dir / "model.ckpt-7").string()));
  CHECK_FALSE(CheckpointInDirectory(dir.string(), (dir / "model.ckpt-7").string()));

  const fs::path dir_link = root / "model_link";
  fs::create_directory_symlink(dir, dir_link);
  CHECK(CheckpointInDirectory(dir_link.string(), CheckpointPrefix(dir.string(), 5)));
  CHECK(CheckpointInDirectory(dir.string(), CheckpointPrefix(dir_link.string(), 5)));
}

TEST_CASE("IsCheckpointFileName knows the files checkpoints consist of and nothing else", "[checkpoint]") {
  for (const char* name : {"checkpoint", "model.ckpt-0.index", "model.ckpt-938.index",
                           "model.ckpt-938.data-00000-of-00001"}) {
    INFO(name);
    CHECK(IsCheckpointFileName(name));
  }
  for (const char* name : {"checkpoint.bak", "model.ckpt-.index", "model.ckpt-9a.index", "model.ckpt-9.idx",
                           "model.ckpt-9.index.old", "model.ckpt-9.data-00001-of-00002", "my.model.ckpt-9.index",
                           "events.out.tfevents.1.host", ""}) {
    INFO(name);
    CHECK_FALSE(IsCheckpointFileName(name));
  }
}
