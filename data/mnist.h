#pragma once
/// MNIST-format data sets: MNIST and Fashion-MNIST, read from their IDX files.

#include <string>

#include "data/dataset.h"

namespace est::data {

/// An MNIST-format data set: features {"image": uint8 [rows, cols]} ([28, 28] for MNIST),
/// labels an int64 scalar per example. Reads <dir>/<split>-images-idx3-ubyte[.gz] and
/// <dir>/<split>-labels-idx1-ubyte[.gz] (the .gz file when both exist) into memory once;
/// `split` is "train" or "t10k". Data sets of the same unchanged files share one read-only
/// copy of their images while any of them lives (the shards of one data set decode it once).
/// Throws DataError naming the directory or file when it is missing, malformed, or when the
/// image and label counts differ.
Dataset Mnist(const std::string& dir, const std::string& split);

/// Throws the DataError that Mnist(dir, split) would for a missing or wrong directory or a
/// missing file, without reading the files: a program checks every split it will need
/// before it starts.
void CheckMnistFiles(const std::string& dir, const std::string& split);

/// Fashion-MNIST (Zalando's 10 clothing classes), which has MNIST's format: see Mnist.
Dataset FashionMnist(const std::string& dir, const std::string& split);

}  // namespace est::data
