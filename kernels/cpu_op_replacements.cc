#include "kernels/cpu_op_replacements.h"

#include "kernels/max_pool2d.h"
#include "kernels/max_pool2d_autograd.h"
#include "kernels/onednn_matmul.h"

#include <c10/util/Exception.h>
#include <torch/library.h>

#include <mutex>

namespace est::kernels {
namespace {

// Passes every warning on but the one LibTorch gives for a kernel registered over its own.
class WithoutOverrideWarning : public c10::WarningHandler {
 public:
  explicit WithoutOverrideWarning(c10::WarningHandler* next) : next_(next) {}
  void process(const c10::SourceLocation& where, const std::string& message, const bool verbatim) override {
    if (message.find("Overriding a previously registered kernel") != std::string::npos) return;
    next_->process(where, message, verbatim);
  }

 private:
  c10::WarningHandler* next_;
};

}  // namespace

void ReplaceSlowCpuOps() {
  static std::once_flag once;
  std::call_once(once, [] {
    WithoutOverrideWarning handler(c10::Warning::get_warning_handler());
    c10::Warning::WarningHandlerGuard guard(&handler);
    // Kept for the life of the process: destroying it would restore LibTorch's kernels while
    // other threads may be dispatching to them.
    static auto* cpu = new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::CPU, __FILE__, __LINE__);
    cpu->impl("max_pool2d_with_indices", TORCH_FN(MaxPool2dWithIndices));
    // Matrix products (linear layers forward and backward, matmul) on oneDNN's brgemm kernel
    // where this CPU gets it, with LibTorch's BLAS for what it leaves.
    if (OneDnnMatmulRuns()) {
      cpu->impl("mm", TORCH_FN(OneDnnMm));
      cpu->impl("addmm", TORCH_FN(OneDnnAddmm));
    }
    // max_pool2d is composite (it calls max_pool2d_with_indices); at autograd's CPU key it gets
    // a kernel and a backward node of its own, which keep no indices and fold relu's backward in.
    static auto* autograd =
        new torch::Library(torch::Library::IMPL, "aten", c10::DispatchKey::AutogradCPU, __FILE__, __LINE__);
    autograd->impl("max_pool2d", TORCH_FN(MaxPool2dAutograd));
  });
}

std::vector<std::string> ReplacedCpuOps() {
  std::vector<std::string> ops{"aten::max_pool2d_with_indices", "aten::max_pool2d (autograd)"};
  if (OneDnnMatmulRuns()) ops.insert(ops.end(), {"aten::mm (oneDNN)", "aten::addmm (oneDNN)"});
  return ops;
}

}  // namespace est::kernels
