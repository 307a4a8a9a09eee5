// Dataset::parse_batches: groups of consecutive records parsed into one element each, as
// tf.data's batch(n).map(parse_example).

#include <ATen/ops/empty.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "common/error.h"
#include "data/dataset.h"
#include "data/dataset_node.h"
#include "data/example/feature_values.h"
#include "data/ops/saturating.h"

namespace est::data {
namespace {

/// The feature of a record's bytes, as TFRecordDataset gives it without a parser.
constexpr const char* kRecordKey = "record";
/// A group's features: its records' bytes one after another, and where each ends.
constexpr const char* kGroupBytesKey = "records";
constexpr const char* kGroupEndsKey = "record_ends";

/// The bytes of the record in `element`; DataError when it holds no record's bytes.
std::string_view RecordBytes(const Element& element) {
  auto found = element.features.find(kRecordKey);
  EST_CHECK(found != element.features.end() && element.features.size() == 1 && !element.labels.defined(),
            DataError, "Dataset::parse_batches: its input's elements must hold a record's bytes as the one feature '",
            kRecordKey, "' (TFRecordDataset without a parser gives them)");
  const at::Tensor& bytes = found->second;
  EST_CHECK(bytes.defined() && bytes.scalar_type() == at::kByte && bytes.dim() == 1 && bytes.is_contiguous() &&
                bytes.device().is_cpu(),
            DataError, "Dataset::parse_batches: feature '", kRecordKey,
            "' must be a contiguous uint8 [size] CPU tensor (a record's bytes)");
  return {static_cast<const char*>(bytes.data_ptr()), static_cast<size_t>(bytes.numel())};
}

/// Groups of `batch_size` consecutive records, each as one element of the records' bytes
/// concatenated and their ends, for a map to parse.
class GroupRecordsNode : public DatasetNode {
 public:
  GroupRecordsNode(std::shared_ptr<const DatasetNode> input, int64_t batch_size, bool drop_remainder)
      : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}

  std::shared_ptr<const DatasetNode> input() const override { return input_; }

  std::shared_ptr<const DatasetNode> on_input(std::shared_ptr<const DatasetNode> input) const override {
    return std::make_shared<GroupRecordsNode>(std::move(input), batch_size_, drop_remainder_);
  }

  std::unique_ptr<Iterator> make_iterator() const override {
    return std::make_unique<GroupIterator>(input_->make_iterator(), batch_size_, drop_remainder_);
  }

  int64_t cardinality() const override {
    const int64_t records = input_->cardinality();
    if (records < 0) return records;
    return BatchesOf(records, batch_size_, drop_remainder_);
  }

 private:
  class GroupIterator : public Iterator {
   public:
    GroupIterator(std::unique_ptr<Iterator> input, int64_t batch_size, bool drop_remainder)
        : input_(std::move(input)), batch_size_(batch_size), drop_remainder_(drop_remainder) {}

    std::optional<Element> next() override {
      if (!input_) return std::nullopt;
      records_.clear();
      views_.clear();
      int64_t total = 0;
      while (static_cast<int64_t>(records_.size()) < batch_size_) {
        auto element = input_->next();
        if (!element) {
          input_.reset();
          break;
        }
        views_.push_back(RecordBytes(*element));  // a view of the tensor kept in records_
        total += static_cast<int64_t>(views_.back().size());
        records_.push_back(std::move(*element));
      }
      if (records_.empty() || (drop_remainder_ && static_cast<int64_t>(records_.size()) < batch_size_))
        return std::nullopt;
      at::Tensor bytes = HostTensor({total}, at::kByte);
      at::Tensor ends = HostTensor({static_cast<int64_t>(views_.size())}, at::kLong);
      auto* out = static_cast<char*>(bytes.data_ptr());
      int64_t* end = ends.data_ptr<int64_t>();
      int64_t offset = 0;
      for (const std::string_view view : views_) {
        if (!view.empty()) std::memcpy(out + offset, view.data(), view.size());
        offset += static_cast<int64_t>(view.size());
        *end++ = offset;
      }
      Element group;
      group.features.emplace(kGroupBytesKey, std::move(bytes));
      group.features.emplace(kGroupEndsKey, std::move(ends));
      return group;
    }

    /// Skips the input's records of whole groups; copies nothing.
    int64_t skip(int64_t count) override {
      if (!input_) return 0;
      const int64_t wanted = SaturatingProduct(count, batch_size_);
      const int64_t skipped = input_->skip(wanted);
      if (skipped == wanted) return count;
      input_.reset();
      return BatchesOf(skipped, batch_size_, drop_remainder_);
    }

   private:
    std::unique_ptr<Iterator> input_;
    int64_t batch_size_;
    bool drop_remainder_;
    std::vector<Element> records_;  ///< the group being gathered (its capacity kept)
    std::vector<std::string_view> views_;  ///< their bytes
  };

  std::shared_ptr<const DatasetNode> input_;
  int64_t batch_size_;
  bool drop_remainder_;
};

}  // namespace

Dataset Dataset::parse_batches(int64_t batch_size,
                               std::function<Element(const std::vector<std::string_view>& records)> parser,
                               ParseBatchesOptions options) const {
  EST_CHECK(batch_size >= 1, DataError, "Dataset::parse_batches: batch_size is ", batch_size,
            ", expected at least 1");
  EST_CHECK(parser != nullptr, DataError, "Dataset::parse_batches: the parser is empty");
  Dataset groups(std::make_shared<GroupRecordsNode>(node_, batch_size, options.drop_remainder()));
  auto parse = [parser = std::move(parser)](Element group) {
    const at::Tensor& bytes = group.features.at(kGroupBytesKey);
    const at::Tensor& ends = group.features.at(kGroupEndsKey);
    const auto* data = static_cast<const char*>(bytes.data_ptr());
    const int64_t* end = ends.data_ptr<int64_t>();
    std::vector<std::string_view> records(static_cast<size_t>(ends.numel()));
    int64_t begin = 0;
    for (size_t i = 0; i < records.size(); ++i) {
      records[i] = std::string_view(data + begin, static_cast<size_t>(end[i] - begin));
      begin = end[i];
    }
    return parser(records);
  };
  return groups.map(std::move(parse), options.num_parallel_calls());
}

}  // namespace est::data
