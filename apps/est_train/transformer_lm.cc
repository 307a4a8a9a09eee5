// A byte-level Transformer language model on the text of Debian's fortunes package: the
// model that needs the whole training recipe (warmup and cosine decay, clipping, AdamW with
// weight decay on the weight matrices only, dropout).

#include <torch/torch.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "apps/est_train/models.h"
#include "common/error.h"
#include "estimator/estimator_spec.h"
#include "estimator/metrics/accuracy.h"
#include "estimator/model_context.h"
#include "estimator/schedules/decay_schedules.h"
#include "estimator/schedules/learning_rate_schedule.h"

namespace est_train {
namespace {

constexpr int64_t kVocabulary = 256;  // bytes
constexpr int64_t kContext = 64;      // bytes a prediction sees
constexpr int64_t kWidth = 128;
constexpr int64_t kHeads = 4;
constexpr int64_t kLayers = 2;
constexpr int64_t kFeedForward = 512;
constexpr double kDropout = 0.1;
constexpr double kLmLearningRate = 2e-3;  // AdamW's peak rate, without --learning-rate
constexpr double kWeightDecay = 0.1;
constexpr double kClipNorm = 1.0;
constexpr int64_t kHeldOutEvery = 20;  // every 20th window is validation text

// Multi-head self-attention as torch::nn::MultiheadAttention computes it (one input projection
// of queries, keys and values; the same parameters and names), written so that the tracer
// records it for any batch size: its reshapes take the batch as -1 where LibTorch's reads it in C++.
struct SelfAttentionImpl : torch::nn::Module {
  SelfAttentionImpl() {
    in_proj_weight = register_parameter("in_proj_weight", torch::empty({3 * kWidth, kWidth}));
    in_proj_bias = register_parameter("in_proj_bias", torch::zeros({3 * kWidth}));
    out_proj = register_module("out_proj", torch::nn::Linear(kWidth, kWidth));
    torch::nn::init::xavier_uniform_(in_proj_weight);
    torch::nn::init::zeros_(out_proj->bias);
  }

  // [T, N, E] -> [T, N, E]; `mask` [T, T] is added to the attention scores.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) {
    constexpr int64_t kHeadWidth = kWidth / kHeads;
    const int64_t length = x.size(0);
    const std::vector<torch::Tensor> qkv = torch::nn::functional::linear(x, in_proj_weight, in_proj_bias).chunk(3, -1);
    auto heads = [&](const torch::Tensor& t) { return t.reshape({length, -1, kHeadWidth}).transpose(0, 1); };
    const torch::Tensor q = heads(qkv[0] * (1.0 / std::sqrt(static_cast<double>(kHeadWidth))));
    const torch::Tensor scores = torch::baddbmm(mask, q, heads(qkv[1]).transpose(1, 2));  // [N·H, T, T]
    const torch::Tensor weights = torch::dropout(torch::softmax(scores, -1), kDropout, is_training());
    return out_proj(torch::bmm(weights, heads(qkv[2])).transpose(0, 1).reshape({length, -1, kWidth}));
  }

  torch::Tensor in_proj_weight, in_proj_bias;
  torch::nn::Linear out_proj{nullptr};
};
TORCH_MODULE(SelfAttention);

// A post-norm Transformer encoder layer: torch::nn::TransformerEncoderLayer's computation (relu),
// parameters and names, on SelfAttention.
struct EncoderLayerImpl : torch::nn::Module {
  EncoderLayerImpl() {
    self_attn = register_module("self_attn", SelfAttention());
    linear1 = register_module("linear1", torch::nn::Linear(kWidth, kFeedForward));
    dropout = register_module("dropout", torch::nn::Dropout(kDropout));
    linear2 = register_module("linear2", torch::nn::Linear(kFeedForward, kWidth));
    norm1 = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({kWidth})));
    norm2 = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({kWidth})));
    dropout1 = register_module("dropout1", torch::nn::Dropout(kDropout));
    dropout2 = register_module("dropout2", torch::nn::Dropout(kDropout));
  }

  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& mask) {
    const torch::Tensor attended = norm1(x + dropout1(self_attn(x, mask)));
    return norm2(attended + dropout2(linear2(dropout(torch::relu(linear1(attended))))));
  }

  SelfAttention self_attn{nullptr};
  torch::nn::Linear linear1{nullptr}, linear2{nullptr};
  torch::nn::Dropout dropout{nullptr}, dropout1{nullptr}, dropout2{nullptr};
  torch::nn::LayerNorm norm1{nullptr}, norm2{nullptr};
};
TORCH_MODULE(EncoderLayer);

// Token and position embeddings, kLayers causal self-attention layers, a final LayerNorm and
// a linear head over the next byte.
struct TransformerLmImpl : torch::nn::Module {
  explicit TransformerLmImpl(int64_t context) {
    tokens = register_module("tokens", torch::nn::Embedding(kVocabulary, kWidth));
    positions = register_module("positions", torch::nn::Embedding(context, kWidth));
    dropout = register_module("dropout", torch::nn::Dropout(kDropout));
    for (int64_t i = 0; i < kLayers; ++i) layers.push_back(register_module("layer" + std::to_string(i), EncoderLayer()));
    norm = register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({kWidth})));
    head = register_module("head", torch::nn::Linear(kWidth, kVocabulary));
  }

  // [N, T] byte ids -> [N, T, kVocabulary] logits of each next byte, position t seeing 0..t.
  torch::Tensor forward(const torch::Tensor& input) {
    const int64_t length = input.size(1);
    torch::Tensor x = tokens(input) + positions(torch::arange(length, input.options()));
    x = dropout(x).transpose(0, 1);  // the layers take [T, N, E]
    const torch::Tensor causal =
        torch::full({length, length}, -std::numeric_limits<float>::infinity(), x.options()).triu(1);
    for (auto& layer : layers) x = layer->forward(x, causal);
    return head(norm(x.transpose(0, 1)));
  }

  torch::nn::Embedding tokens{nullptr}, positions{nullptr};
  torch::nn::Dropout dropout{nullptr};
  std::vector<EncoderLayer> layers;
  torch::nn::LayerNorm norm{nullptr};
  torch::nn::Linear head{nullptr};
};
TORCH_MODULE(TransformerLm);

// The weight matrices of the layers and the head, which AdamW decays; the rest (biases,
// LayerNorm's scales, the embeddings) it does not, as GPT-2 trains.
bool Decayed(const std::string& name, const torch::Tensor& parameter) {
  return parameter.dim() == 2 && name.rfind("tokens.", 0) != 0 && name.rfind("positions.", 0) != 0;
}

// The bytes of every fortune file of `dir` (the files without a '.' in their name: not the
// .dat indexes or the .u8 links), in name order.
torch::Tensor ReadCorpus(const std::string& dir) {
  std::error_code error;
  EST_CHECK(std::filesystem::is_directory(dir, error), est::DataError, "text directory '", dir,
            "' does not exist; install the Debian package fortunes or pass --data-dir");
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && !entry.is_symlink() && name.find('.') == std::string::npos)
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::string text;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    EST_CHECK(in.good(), est::DataError, "cannot read '", file.string(), "'");
    text.append(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  EST_CHECK(!text.empty(), est::DataError, "no text in '", dir, "': expected fortune files (plain text) there");
  return torch::from_blob(text.data(), {static_cast<int64_t>(text.size())}, torch::kUInt8).to(torch::kLong);
}

// The corpus cut into windows of context + 1 bytes; every kHeldOutEvery-th is validation text.
struct Windows {
  torch::Tensor train, validation;
};

Windows CutWindows(const torch::Tensor& corpus, int64_t context) {
  const int64_t count = (corpus.numel() - 1) / context;
  EST_CHECK(count >= 2 * kHeldOutEvery, est::DataError, "the text has ", corpus.numel(),
            " bytes: too few for windows of ", context + 1, " bytes and a validation share");
  const torch::Tensor windows = corpus.narrow(0, 0, count * context + 1).unfold(0, context + 1, context);
  const torch::Tensor held_out = torch::arange(count) % kHeldOutEvery == kHeldOutEvery - 1;
  return {windows.index({held_out.logical_not()}).contiguous(), windows.index({held_out}).contiguous()};
}

est::EstimatorSpec TransformerLmModelFn(const est::Features& features, const torch::Tensor& labels, est::Mode mode,
                                        est::ModelContext& ctx, int64_t max_steps) {
  auto model = ctx.module("lm", [] { return TransformerLm(kContext); });
  const torch::Tensor logits = model->forward(features.at("tokens"));
  if (mode == est::Mode::kPredict)
    return est::EstimatorSpec::Predict({{"next_byte", logits.select(1, logits.size(1) - 1).argmax(1)}});
  const torch::Tensor loss = torch::cross_entropy_loss(logits.reshape({-1, kVocabulary}), labels.reshape({-1}));
  if (mode == est::Mode::kEval)
    return est::EstimatorSpec::Eval(
        loss, {{"accuracy", est::metrics::Accuracy(labels.reshape({-1}), logits.argmax(2).reshape({-1}))}});
  const double peak = ctx.params().value("learning_rate", kLmLearningRate);
  auto& decayed = ctx.optimizer("adamw", [&] {
    std::vector<torch::Tensor> weights;
    for (const auto& item : model->named_parameters())
      if (Decayed(item.key(), item.value())) weights.push_back(item.value());
    return torch::optim::AdamW(weights, torch::optim::AdamWOptions(peak).weight_decay(kWeightDecay));
  });
  auto& undecayed = ctx.optimizer("adamw_no_decay", [&] {
    std::vector<torch::Tensor> rest;
    for (const auto& item : model->named_parameters())
      if (!Decayed(item.key(), item.value())) rest.push_back(item.value());
    return torch::optim::AdamW(rest, torch::optim::AdamWOptions(peak).weight_decay(0));
  });
  const int64_t warmup = std::max<int64_t>(1, std::min<int64_t>(100, max_steps / 10));
  return est::EstimatorSpec::Train(loss, {decayed, undecayed})
      .learning_rate(est::schedules::LinearWarmup(
          est::schedules::CosineDecay(peak, std::max<int64_t>(1, max_steps - warmup), 0.1), warmup))
      .clip_gradients_by_global_norm(kClipNorm);
}

}  // namespace

ModelRecipe TransformerLanguageModel(const std::string& text_dir, bool reads_data, int64_t batch_size,
                                     uint64_t shuffle_seed, int64_t max_steps) {
  auto windows = std::make_shared<Windows>();
  if (reads_data) *windows = CutWindows(ReadCorpus(text_dir), kContext);
  auto model_fn = [max_steps](const est::Features& features, const torch::Tensor& labels, est::Mode mode,
                              est::ModelContext& ctx) {
    return TransformerLmModelFn(features, labels, mode, ctx, max_steps);
  };
  auto input_fn = [=](est::Mode mode, const est::distribute::InputContext& input) {
    const torch::Tensor& split = mode == est::Mode::kTrain ? windows->train : windows->validation;
    auto dataset = est::data::Dataset::FromTensors({{"tokens", split.narrow(1, 0, kContext)}}, split.narrow(1, 1, kContext))
                       .shard(input.num_input_pipelines(), input.input_pipeline_id());
    if (mode == est::Mode::kTrain) dataset = dataset.shuffle(split.size(0), shuffle_seed).repeat();
    return dataset.batch(input.per_replica_batch_size(batch_size));
  };
  auto serving_input = [] { return est::ServingInputReceiver{{{"tokens", torch::kInt64, {-1, kContext}}}, nullptr}; };
  return ModelRecipe{model_fn, input_fn, kLmLearningRate, serving_input, {"accuracy"}};
}

}  // namespace est_train
