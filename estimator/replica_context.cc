#include "estimator/replica_context.h"

#include <torch/autograd.h>

#include <utility>

#include "distribute/replica_group.h"

namespace est {
namespace {

using distribute::ReduceOp;
using distribute::ReplicaGroup;
using torch::autograd::AutogradContext;
using torch::autograd::tensor_list;

// The group and local replica an autograd node's backward calls its collective with.
void SaveReplica(AutogradContext* ctx, ReplicaGroup* group, int local) {
  ctx->saved_data["group"] = reinterpret_cast<int64_t>(group);
  ctx->saved_data["local"] = static_cast<int64_t>(local);
}

ReplicaGroup& GroupOf(AutogradContext* ctx) {
  return *reinterpret_cast<ReplicaGroup*>(ctx->saved_data["group"].toInt());
}

int LocalOf(AutogradContext* ctx) { return static_cast<int>(ctx->saved_data["local"].toInt()); }

// y = Σ_r x_r (or its mean): every replica's loss depends on every x_r, so the gradient of
// x_r is the sum (mean) over replicas of their gradients of y.
struct AllReduceFunction : torch::autograd::Function<AllReduceFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& value, ReplicaGroup* group, int local,
                            ReduceOp op) {
    SaveReplica(ctx, group, local);
    ctx->saved_data["mean"] = op == ReduceOp::kMean;
    return group->all_reduce(local, value, op);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    const ReduceOp op = ctx->saved_data["mean"].toBool() ? ReduceOp::kMean : ReduceOp::kSum;
    return {GroupOf(ctx).all_reduce(LocalOf(ctx), grads[0], op), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

// y = concat_r x_r: the gradient of x_r is its slice of the sum over replicas of their
// gradients of y.
struct AllGatherFunction : torch::autograd::Function<AllGatherFunction> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& value, ReplicaGroup* group, int local,
                            int64_t axis) {
    SaveReplica(ctx, group, local);
    const int64_t along = axis < 0 ? axis + value.dim() : axis;
    ctx->saved_data["axis"] = along;
    ctx->saved_data["length"] = value.dim() > 0 ? value.size(along) : int64_t{0};
    return group->all_gather(local, value, axis);
  }

  static tensor_list backward(AutogradContext* ctx, tensor_list grads) {
    ReplicaGroup& group = GroupOf(ctx);
    const int local = LocalOf(ctx);
    const int64_t length = ctx->saved_data["length"].toInt();
    const at::Tensor summed = group.all_reduce(local, grads[0], ReduceOp::kSum);
    return {summed.narrow(ctx->saved_data["axis"].toInt(), group.replica_id(local) * length, length), at::Tensor(),
            at::Tensor(), at::Tensor()};
  }
};

}  // namespace

ReplicaContext::ReplicaContext(distribute::ReplicaGroup* group, int local, std::string task_type, int task_id)
    : group_(group), local_(local), task_type_(std::move(task_type)), task_id_(task_id) {}

int ReplicaContext::replica_id_in_sync_group() const { return group_ ? group_->replica_id(local_) : 0; }

int ReplicaContext::num_replicas_in_sync() const { return group_ ? group_->size() : 1; }

at::Tensor ReplicaContext::all_reduce(distribute::ReduceOp op, const at::Tensor& value) {
  if (group_ == nullptr) return value.clone();
  return AllReduceFunction::apply(value, group_, local_, op);
}

at::Tensor ReplicaContext::all_gather(const at::Tensor& value, int64_t axis) {
  if (group_ == nullptr) {
    distribute::ReplicaGroup alone(1);
    return alone.all_gather(0, value, axis);
  }
  return AllGatherFunction::apply(value, group_, local_, axis);
}

}  // namespace est
