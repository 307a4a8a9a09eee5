// checkpoint_difference A B: exits 0 when checkpoints A and B (prefixes, "dir/model.ckpt-20")
// hold the same global step, tensors bit for bit and input position; else prints where they
// differ and exits 1. For tests outside C++ (tests/apps/est_launch_hosts_test.py).

#include <cstdio>
#include <exception>
#include <string>

#include "tests/checkpoint_difference.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: checkpoint_difference CHECKPOINT_A CHECKPOINT_B\n");
    return 2;
  }
  try {
    const std::string difference = est::testing::CheckpointDifference(argv[1], argv[2]);
    if (difference.empty()) return 0;
    std::printf("%s and %s differ: %s\n", argv[1], argv[2], difference.c_str());
  } catch (const std::exception& e) {
    std::printf("%s and %s cannot be compared: %s\n", argv[1], argv[2], e.what());
  }
  return 1;
}
