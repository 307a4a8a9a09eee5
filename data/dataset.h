#pragma once
/// est::data::Dataset — a tf.data-like pull pipeline of named tensors.

#include <torch/arg.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/element.h"
#include "data/iterator.h"

namespace est::data {

class DatasetNode;

/// As a map's or an interleave's num_parallel_calls: one thread per CPU this process may
/// run on beyond LibTorch's intra-op threads, and at least one (the step's own cores are
/// left to it), counted when an iterator is made; as cycle_length: one file per hardware
/// thread. Unlike tf.data's AUTOTUNE, the number is not tuned while the pipeline runs.
inline constexpr int64_t kAutotune = -1;

/// The threads kAutotune stands for as num_parallel_calls on the calling thread now: the
/// CPUs it may run on (its affinity) less LibTorch's intra-op threads, at least one.
size_t AutotunedThreads();

/// Dataset::cardinality of a pipeline that never ends: repeat() of an input not known to be
/// empty (as tf.data counts it, also over an input of unknown length).
inline constexpr int64_t kInfiniteCardinality = -1;
/// Dataset::cardinality of a pipeline whose length only iterating tells (a filter, a
/// FromGenerator source).
inline constexpr int64_t kUnknownCardinality = -2;

/// How Dataset::auto_shard divides the input among input pipelines, after tf.data's
/// AutoShardPolicy.
enum class AutoShardPolicy {
  /// By file when the pipeline reads at least as many files as there are input pipelines;
  /// otherwise by element, with a warning saying why.
  kAuto,
  /// By file; a DataError when the pipeline reads no files, or fewer than the pipelines.
  kFile,
  /// By element: every pipeline reads all the input and keeps every n-th element of its
  /// output, which must come in the same order everywhere (seed every shuffle).
  kData,
  /// Not at all: every pipeline reads all the input.
  kOff,
};

/// How Dataset::parse_batches groups and parses its records.
struct ParseBatchesOptions {
  /// Drop a last group of fewer than batch_size records, as batch's drop_remainder.
  TORCH_ARG(bool, drop_remainder) = false;
  /// Groups parsed at once on worker threads, as map's num_parallel_calls; 1 parses on the
  /// consumer's thread; kAutotune: one per CPU beyond LibTorch's intra-op threads.
  TORCH_ARG(int64_t, num_parallel_calls) = 1;
};

/// How Dataset::InterleaveFiles reads its files, as tf.data's interleave arguments.
struct InterleaveOptions {
  /// Files open at once; kAutotune: one per hardware thread. At most the number of files.
  TORCH_ARG(int64_t, cycle_length) = kAutotune;
  /// Consecutive elements taken from one file before moving to the next open one.
  TORCH_ARG(int64_t, block_length) = 1;
  /// Threads that read the open files ahead of the consumer; 1 reads on the consumer's
  /// thread; kAutotune: one per CPU beyond LibTorch's intra-op threads, at least one.
  TORCH_ARG(int64_t, num_parallel_calls) = 1;
  /// With threads, keep the sequential order (true) or, when the next file has nothing read
  /// yet, take an element of another open file instead of waiting (false).
  TORCH_ARG(bool, deterministic) = true;
};

/// An immutable description of an input pipeline: a source followed by transformations.
/// Cheap to copy (copies share the pipeline); every transformation returns a new Dataset
/// and leaves this one unchanged. Iterate with make_iterator(). Semantics follow tf.data.
///
/// Determinism: a pipeline built afresh from the same code and seeds yields the same
/// sequence on every run, so a consumer can restore a position by building the Dataset
/// again and calling skip(N) on a fresh iterator. The exception is an unseeded shuffle,
/// which draws its seed from std::random_device.
///
/// Skipping: Iterator::skip moves past elements without making them where it can, so a
/// restored position costs little more than the elements it still needs: a FromTensors
/// source, batch, take, skip, shard, a read from a filled cache, and repeat move by
/// arithmetic; TFRecordDataset reads record headers only, and InterleaveFiles skips file by
/// file; map moves its input without calling the function (map functions are taken to be
/// pure); shuffle over an input of known cardinality, or an endless one (a repeat() before
/// it), replays its random draws on element numbers and then reads only the input elements
/// still in its buffer (at most a few buffer sizes back). filter, a cache being filled, a
/// shuffle over an input of unknown length (a file source without repeat() before the
/// shuffle), and FromGenerator sources (unless their iterator overrides skip) make and drop
/// the elements.
class Dataset {
 public:
  /// One element per index of dim 0 of every tensor (features and labels, when defined):
  /// element i holds tensor.select(0, i), a view sharing the tensor's storage. Every
  /// tensor needs at least one dimension and all dim-0 sizes must agree; DataError
  /// naming the keys and sizes otherwise.
  static Dataset FromTensors(Features features, at::Tensor labels = {});

  /// A user-defined source: each make_iterator() calls `make_iterator` for a new pass.
  static Dataset FromGenerator(std::function<std::unique_ptr<Iterator>()> make_iterator);

  /// tf.data's list_files(...).interleave(fn, ...): the elements of the datasets `fn` makes
  /// of each file, `cycle_length` files at a time, `block_length` elements from each in turn;
  /// a file that ends gives its place to the next file. The order is tf.data's. With
  /// num_parallel_calls above 1, threads read the open files ahead, each by at most 16
  /// elements or 4 blocks, whichever is more. An exception from a file is thrown by the
  /// next() that reaches its position; that file is closed and the next call goes on with
  /// the others. Dataset::auto_shard shards `files`. `fn` runs on the consumer's thread.
  static Dataset InterleaveFiles(std::vector<std::string> files, std::function<Dataset(const std::string& file)> fn,
                                 InterleaveOptions options = {});

  /// Applies `fn` to every element. With `num_parallel_calls` above 1 (or kAutotune, when
  /// that counts more than one), that many worker threads of each iterator call `fn` on
  /// different elements at once, so `fn` must be thread-safe; the workers see the
  /// thread-local LibTorch state (grad mode and the like) of the thread that made the
  /// iterator. The output order, the values and the exceptions are those of the
  /// sequential map: an exception from `fn` is thrown by the next() that would have
  /// returned its element, and the following next() goes on with the element after it.
  /// An exception from the input, which a parallel map reads ahead, is thrown after the
  /// elements before it, and again by every later next(). A parallel iterator holds at
  /// most 16 * num_parallel_calls elements read ahead of its consumer; destroying it
  /// joins the workers once their current calls return. Tensor operations inside `fn`
  /// still use LibTorch's intra-op thread pool; nothing global is changed.
  Dataset map(std::function<Element(Element)> fn, int64_t num_parallel_calls = 1) const;

  /// Keeps the elements for which `predicate` is true.
  Dataset filter(std::function<bool(const Element&)> predicate) const;

  /// Shuffles with a buffer of `buffer_size` elements, as tf.data does: fills the buffer,
  /// yields a uniformly chosen buffered element and refills its place from the input.
  /// buffer_size 1 keeps the input order; a buffer at least as large as the input gives
  /// a uniform permutation. A `seed` makes the order reproducible across processes;
  /// without one the seed comes from std::random_device, drawn once per Dataset.
  /// With `reshuffle_each_iteration`, each iterator made from this Dataset (or a copy,
  /// or a downstream repeat()) gets a different order, derived from the seed and the
  /// number of iterators made before it; without it every iterator gets the same order.
  Dataset shuffle(int64_t buffer_size, std::optional<uint64_t> seed = std::nullopt,
                  bool reshuffle_each_iteration = true) const;

  /// Stacks `batch_size` consecutive elements per feature key and for the labels (a new
  /// leading dimension). The last, smaller batch is yielded unless `drop_remainder`.
  /// Elements of a batch must have the same keys, shapes and dtypes, and either all or
  /// none must have labels; DataError naming the key and both shapes or dtypes otherwise.
  /// Each batch tensor is allocated once and owns its memory: the elements are copied
  /// into it (one copy of a run of rows when batch directly follows FromTensors).
  Dataset batch(int64_t batch_size, bool drop_remainder = false) const;

  /// As batch, for tensors of one key whose shapes differ (VarLen features of
  /// data/example.h): each is padded at the end of every dimension with zeros to the
  /// largest size in the batch, as tf.data's padded_batch with its default padded_shapes
  /// and padding values. Elements of a batch must have the same keys, ranks and dtypes.
  Dataset padded_batch(int64_t batch_size, bool drop_remainder = false) const;

  /// tf.data's batch(batch_size).map(parse_example): groups `batch_size` consecutive records
  /// (elements whose one feature "record" is a record's bytes, uint8 [size], as TFRecordDataset
  /// gives them without a parser) and turns each group into one element with `parser`
  /// (data::ParseExampleBatch), which writes a batch's values into one tensor per feature
  /// instead of a tensor per feature per record. Shuffle records before it. Parsing runs as map
  /// runs its function (options' num_parallel_calls, its order, errors and skipping); skip()
  /// skips whole groups of records without parsing them.
  Dataset parse_batches(int64_t batch_size,
                        std::function<Element(const std::vector<std::string_view>& records)> parser,
                        ParseBatchesOptions options = {}) const;

  /// Repeats the input `count` times; -1 repeats forever. A pass that yields nothing
  /// ends the repetition, so an empty input never loops forever.
  Dataset repeat(int64_t count = -1) const;

  /// At most the first `count` elements; -1 takes all of them.
  Dataset take(int64_t count) const;

  /// All but the first `count` elements; -1 skips all of them.
  Dataset skip(int64_t count) const;

  /// Every `num_shards`-th element starting at element `index`, for one of `num_shards`
  /// input pipelines. Needs num_shards >= 1 and 0 <= index < num_shards.
  Dataset shard(int64_t num_shards, int64_t index) const;

  /// This pipeline's share for input pipeline `input_pipeline_id` of `num_input_pipelines`
  /// (an InputContext's two numbers), as tf.data's auto-sharding: by file, sharding the file
  /// list of the pipeline's file source (TFRecordDataset, CsvDataset, InterleaveFiles) round-robin and
  /// rebuilding the transformations above it, or by element, as shard() at the end of the
  /// pipeline; `policy` says which. One input pipeline returns the pipeline unchanged.
  Dataset auto_shard(int64_t num_input_pipelines, int64_t input_pipeline_id,
                     AutoShardPolicy policy = AutoShardPolicy::kAuto) const;

  /// Keeps the elements in memory: the first pass that reaches the end of the input
  /// fills the cache, and later iterators read from memory without running the input
  /// again. A pass that stops early caches nothing. Cached tensors are shared with the
  /// consumer, which must not modify them in place.
  Dataset cache() const;

  /// Reads ahead on a background thread into a queue of at most `buffer_size` elements.
  /// An exception from the input is rethrown by next() (and again by every later call).
  /// Destroying the iterator stops and joins the thread once the input's current
  /// next() call returns.
  Dataset prefetch(int64_t buffer_size) const;

  /// A fresh iterator from the first element.
  std::unique_ptr<Iterator> make_iterator() const;

  /// The number of elements an iterator yields, as tf.data's cardinality():
  /// kInfiniteCardinality for an endless pipeline, kUnknownCardinality where only
  /// iterating tells (after a filter or a FromGenerator source).
  int64_t cardinality() const;

 private:
  explicit Dataset(std::shared_ptr<const DatasetNode> node);
  friend Dataset DatasetOf(std::shared_ptr<const DatasetNode> node);

  std::shared_ptr<const DatasetNode> node_;
};

/// The batch Dataset::batch makes of `elements` (padded: Dataset::padded_batch), outside a
/// pipeline: a server batching the examples of a request. DataError as batch gives; `elements`
/// must not be empty.
Element BatchElements(const std::vector<Element>& elements, bool padded);

}  // namespace est::data
