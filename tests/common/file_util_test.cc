#include "common/file_util.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "common/error.h"
#include "tests/test_util.h"

using namespace est;
namespace fs = std::filesystem;

using est::testing::CountEntries;
using est::testing::FreshTempDir;

TEST_CASE("WriteFileAtomic replaces the whole file", "[common]") {
  auto dir = FreshTempDir("replace");
  const std::string path = (dir / "f").string();
  WriteFileAtomic(path, "first version");
  WriteFileAtomic(path, "second");
  CHECK(ReadFile(path) == "second");
  CHECK(CountEntries(dir) == 1);
}

TEST_CASE("AtomicFileWriter without commit leaves the old file and no temporary", "[common]") {
  auto dir = FreshTempDir("abandon");
  const std::string path = (dir / "f").string();
  WriteFileAtomic(path, "old");
  {
    AtomicFileWriter writer(path);
    writer.append(std::string(3 << 20, 'x'));  // larger than the buffer: reaches the disk
    CHECK(writer.size() == (3u << 20));
    CHECK(CountEntries(dir) == 2);
  }
  CHECK(ReadFile(path) == "old");
  CHECK(CountEntries(dir) == 1);
}

TEST_CASE("RemoveTemporaryFiles removes only leftovers of our writers, of the files it is told are ours",
          "[common]") {
  CHECK(TemporaryFileTarget("model.ckpt-5.index.tmp-77-ff") == "model.ckpt-5.index");
  CHECK(TemporaryFileTarget("checkpoint.tmp-1234-0a9f") == "checkpoint");
  for (const char* name : {"model.ckpt-5.index", "notes.tmp-", "notes.tmp-old", "notes.tmp-12", "notes.tmp-12-",
                           "notes.tmp--ff", "notes.tmp-12-xyz", "notes.tmp-1a-ff", ".tmp-12-ff", "a.tmp-12-FF"}) {
    INFO(name);
    CHECK_FALSE(TemporaryFileTarget(name).has_value());
    CHECK_FALSE(IsTemporaryFileName(name));
  }
  auto dir = FreshTempDir("leftovers");
  WriteFileAtomic((dir / "keep").string(), "k");
  WriteFileAtomic((dir / "keep.tmp-123-abc").string(), "leftover");     // as if a crash left it
  WriteFileAtomic((dir / "user.tmp-123-abc").string(), "a user's");     // ours() says not ours
  WriteFileAtomic((dir / "keep.tmp-backup").string(), "a user's");      // not our pattern
  fs::create_directory(dir / "keep.tmp-9-9");                           // not a regular file
  const auto ours = [](std::string_view final_name) { return final_name == "keep"; };
  CHECK(RemoveTemporaryFiles(dir.string(), ours) == 1);
  CHECK(fs::exists(dir / "keep"));
  CHECK_FALSE(fs::exists(dir / "keep.tmp-123-abc"));
  CHECK(fs::exists(dir / "user.tmp-123-abc"));
  CHECK(fs::exists(dir / "keep.tmp-backup"));
  CHECK(fs::is_directory(dir / "keep.tmp-9-9"));
}

TEST_CASE("file errors name the path", "[common]") {
  auto dir = FreshTempDir("errors");
  const std::string missing = (dir / "nope" / "f").string();
  CHECK_THROWS_WITH(ReadFile(missing), Catch::Contains(missing));
  CHECK_THROWS_AS(WriteFileAtomic(missing, "x"), IoError);
  WriteFileAtomic((dir / "file").string(), "x");
  CHECK_THROWS_WITH(CreateDirectories((dir / "file").string()), Catch::Contains("file"));
}
