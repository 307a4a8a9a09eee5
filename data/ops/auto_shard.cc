// Dataset::auto_shard: tf.data's auto-sharding, by file where the pipeline reads enough files
// and by element otherwise.

#include <utility>
#include <vector>

#include "common/error.h"
#include "common/logging.h"
#include "data/dataset.h"
#include "data/dataset_node.h"

namespace est::data {
namespace {

/// The nodes from `last` down to its source, last first.
std::vector<std::shared_ptr<const DatasetNode>> Chain(std::shared_ptr<const DatasetNode> last) {
  std::vector<std::shared_ptr<const DatasetNode>> chain;
  for (auto node = std::move(last); node != nullptr; node = node->input()) chain.push_back(node);
  return chain;
}

/// Every `num_shards`-th file from `index`, as shard() over the file list.
std::vector<std::string> ShardFiles(const std::vector<std::string>& files, int64_t num_shards, int64_t index) {
  std::vector<std::string> shard;
  for (size_t i = static_cast<size_t>(index); i < files.size(); i += static_cast<size_t>(num_shards))
    shard.push_back(files[i]);
  return shard;
}

}  // namespace

Dataset Dataset::auto_shard(int64_t num_input_pipelines, int64_t input_pipeline_id, AutoShardPolicy policy) const {
  EST_CHECK(num_input_pipelines >= 1, DataError, "Dataset::auto_shard: num_input_pipelines is ", num_input_pipelines,
            ", expected at least 1");
  EST_CHECK(input_pipeline_id >= 0 && input_pipeline_id < num_input_pipelines, DataError,
            "Dataset::auto_shard: input_pipeline_id is ", input_pipeline_id,
            ", expected 0 <= input_pipeline_id < num_input_pipelines = ", num_input_pipelines);
  if (num_input_pipelines == 1 || policy == AutoShardPolicy::kOff) return *this;
  if (policy == AutoShardPolicy::kData) return shard(num_input_pipelines, input_pipeline_id);

  const auto chain = Chain(node_);
  const std::vector<std::string>* files = chain.back()->files();
  const size_t needed = static_cast<size_t>(num_input_pipelines);
  if (files == nullptr || files->size() < needed) {
    const std::string why = files == nullptr ? "the pipeline's source reads no files (it is not a TFRecordDataset, "
                                               "CsvDataset or InterleaveFiles)"
                                             : "it reads " + std::to_string(files->size()) + " file(s), fewer than the " +
                                                   std::to_string(needed) + " input pipelines";
    EST_CHECK(policy == AutoShardPolicy::kAuto, DataError, "Dataset::auto_shard: cannot shard by file: ", why,
              "; use AutoShardPolicy::kData (or kAuto) to shard by element");
    Log().warn("Dataset::auto_shard: sharding by element, not by file: {}. Every input pipeline reads all the input "
               "and keeps 1/{} of it.",
               why, num_input_pipelines);
    return shard(num_input_pipelines, input_pipeline_id);
  }
  std::vector<std::string> shard = ShardFiles(*files, num_input_pipelines, input_pipeline_id);
  Log().info("Dataset::auto_shard: input pipeline {} of {} reads {} of {} files", input_pipeline_id,
             num_input_pipelines, shard.size(), files->size());
  auto node = chain.back()->with_files(std::move(shard));
  for (auto transformation = chain.rbegin() + 1; transformation != chain.rend(); ++transformation)
    node = (*transformation)->on_input(std::move(node));
  return Dataset(std::move(node));
}

}  // namespace est::data
