// ONNX mappings of operators on a tensor's shape and elements: views and reshapes, transposes,
// indexing and slicing, joins and splits, reductions, tensors made to a request's size, and the
// lists and numbers (aten::size, prim::ListConstruct) that carry sizes between them. A size the
// probe runs found fixed is written as a constant; one the request decides is read with Shape.

#include <ATen/ATen.h>

#include <limits>

#include "estimator/export/onnx_op_context.h"

namespace est {
namespace onnx_tensor_ops {
namespace {

/// Input `i` (a number, or None for `otherwise`) as a 1-d int64 tensor of one element.
std::string OneInteger(OnnxOpContext& c, size_t i, int64_t otherwise) {
  if (c.none(i)) return c.graph().int64s({otherwise});
  if (!c.dynamic(i)) return c.graph().int64s({c.integer(i)});
  return c.add("Unsqueeze", {c.tensor(i, at::kLong), c.graph().int64s({0})});
}

/// aten::view and aten::reshape: ONNX's Reshape, whose 0 keeps a size unless allowzero.
void Reshape(OnnxOpContext& c) {
  std::vector<onnx::AttributeProto> attributes;
  if (!c.dynamic(1)) {
    const std::vector<int64_t> sizes = c.integers(1);
    if (std::find(sizes.begin(), sizes.end(), 0) != sizes.end()) {
      if (c.opset() < 14) c.fail("makes a size 0, which ONNX's Reshape writes only from opset 14 (allowzero)");
      attributes.push_back(OnnxIntAttribute("allowzero", 1));
    }
  }
  c.set(0, c.add("Reshape", {c.tensor(0), c.integers_tensor(1)}, attributes));
}

/// aten::flatten(x, start, end): sizes before start and after end kept, those between multiplied,
/// as a shape of constants where the request decides at most one size (that one -1).
void Flatten(OnnxOpContext& c) {
  const int64_t rank = c.rank(0);
  if (rank == 0) {
    c.set(0, c.add("Reshape", {c.tensor(0), c.graph().int64s({1})}));
    return;
  }
  const int64_t start = c.axis(c.integer(1), rank);
  const int64_t end = c.axis(c.integer(2), rank);
  const std::vector<int64_t> sizes = c.sizes(0);
  // Each output size: (the size, or -1 where the request decides it; the input dimension it is,
  // or -1 for the product of start..end).
  std::vector<std::pair<int64_t, int64_t>> output;
  for (int64_t d = 0; d < start; ++d) output.emplace_back(sizes[d], d);
  int64_t product = 1;
  for (int64_t d = start; d <= end; ++d) product = sizes[d] < 0 || product < 0 ? -1 : product * sizes[d];
  output.emplace_back(product, -1);
  for (int64_t d = end + 1; d < rank; ++d) output.emplace_back(sizes[d], d);
  int64_t free = 0;
  for (const auto& [size, from] : output) free += size < 0 ? 1 : 0;
  if (free <= 1) {  // constants, the one size the request decides as -1
    std::vector<int64_t> shape;
    for (const auto& [size, from] : output) shape.push_back(size);
    c.set(0, c.add("Reshape", {c.tensor(0), c.graph().int64s(shape)}));
    return;
  }
  // Several: the sizes kept are read from the input's shape, the product (if free) is -1.
  std::vector<std::string> pieces;
  for (const auto& [size, from] : output) {
    if (size >= 0)
      pieces.push_back(c.graph().int64s({size}));
    else
      pieces.push_back(from < 0 ? c.graph().int64s({-1}) : c.size_tensor(0, from));
  }
  const std::string shape = c.add("Concat", pieces, {OnnxIntAttribute("axis", 0)});
  c.set(0, c.add("Reshape", {c.tensor(0), shape}));
}

/// A Transpose of input 0 by `perm`.
void TransposeBy(OnnxOpContext& c, const std::vector<int64_t>& perm) {
  c.set(0, c.add("Transpose", {c.tensor(0)}, {OnnxIntsAttribute("perm", perm)}));
}

/// aten::transpose(x, a, b) (also swapaxes and swapdims).
void Transpose(OnnxOpContext& c) {
  const int64_t rank = c.rank(0);
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d) perm.push_back(d);
  if (rank == 0) {
    c.set_input(0, 0);
    return;
  }
  std::swap(perm[c.axis(c.integer(1), rank)], perm[c.axis(c.integer(2), rank)]);
  TransposeBy(c, perm);
}

/// aten::squeeze(x), (x, dim) or (x, dims): the dimensions of size 1 among those named.
void Squeeze(OnnxOpContext& c) {
  const int64_t rank = c.rank(0);
  const std::vector<int64_t> sizes = c.sizes(0);
  std::vector<int64_t> named;
  if (c.inputs() > 1) {
    for (int64_t d : c.integers(1)) named.push_back(c.axis(d, rank));
  } else {
    for (int64_t d = 0; d < rank; ++d) named.push_back(d);
  }
  std::vector<int64_t> axes;
  for (int64_t d : named) {
    if (sizes[d] == 1) axes.push_back(d);
    if (sizes[d] < 0 && c.inputs() > 1)
      c.fail("squeezes dimension " + std::to_string(d) + ", whose size the request decides (1 or not)");
  }
  if (axes.empty()) {
    c.set_input(0, 0);
    return;
  }
  c.set(0, c.add("Squeeze", {c.tensor(0), c.graph().int64s(axes)}));
}

/// aten::expand(x, sizes): ONNX's Expand broadcasts, so -1 (keep) is 1 there.
void Expand(OnnxOpContext& c) {
  std::string shape;
  if (!c.dynamic(1)) {
    std::vector<int64_t> sizes = c.integers(1);
    for (int64_t& size : sizes)
      if (size == -1) size = 1;
    shape = c.graph().int64s(sizes);
  } else {
    const std::string sizes = c.integers_tensor(1);
    const std::string keep = c.add("Equal", {sizes, c.graph().int64s({-1})});
    shape = c.add("Where", {keep, c.graph().int64s({1}), sizes});
  }
  c.set(0, c.add("Expand", {c.tensor(0), shape}));
}

/// aten::slice(x, dim, start, end, step) and aten::narrow(x, dim, start, length).
void Slice(OnnxOpContext& c, bool narrow) {
  const int64_t dim = c.axis(c.inputs() > 1 ? c.integer(1) : 0, c.rank(0));
  const std::string start = OneInteger(c, 2, 0);
  std::string end;
  if (narrow) {
    end = !c.dynamic(2) && !c.dynamic(3) ? c.graph().int64s({c.integer(2) + c.integer(3)})
                                        : c.add("Add", {start, OneInteger(c, 3, 0)});
  } else {
    end = OneInteger(c, 3, std::numeric_limits<int64_t>::max());
  }
  const std::string step = narrow || c.inputs() < 5 ? c.graph().int64s({1}) : OneInteger(c, 4, 1);
  c.set(0, c.add("Slice", {c.tensor(0), start, end, c.graph().int64s({dim}), step}));
}

/// The sizes along `dim` of input 0 cut into pieces of `piece` (the last smaller).
std::vector<int64_t> Pieces(OnnxOpContext& c, int64_t dim, int64_t piece) {
  const int64_t size = c.sizes(0).at(dim);
  if (size < 0) c.fail("splits dimension " + std::to_string(dim) + ", whose size the request decides");
  if (piece <= 0) c.fail("splits into pieces of size " + std::to_string(piece) + "; expected at least 1");
  std::vector<int64_t> pieces;
  for (int64_t at = 0; at < size; at += piece) pieces.push_back(std::min(piece, size - at));
  return pieces;
}

/// Input 0 split along `dim` into pieces of `sizes`, as the list output 0.
void SplitInto(OnnxOpContext& c, int64_t dim, const std::vector<int64_t>& sizes, bool squeeze) {
  std::vector<std::string> parts = c.add_n("Split", {c.tensor(0), c.graph().int64s(sizes)},
                                           static_cast<int>(sizes.size()), {OnnxIntAttribute("axis", dim)});
  if (squeeze)
    for (std::string& part : parts) part = c.add("Squeeze", {part, c.graph().int64s({dim})});
  c.set_list(0, parts);
}

/// ONNX reduction `op_type` over input 0's dimensions `dims` (all where empty); the opsets this
/// export writes take ReduceSum's axes as an input and the others' as an attribute.
std::string Reduce(OnnxOpContext& c, const std::string& op_type, const std::string& x, std::vector<int64_t> dims,
                   bool keepdim) {
  const int64_t rank = c.rank(0);
  for (int64_t& d : dims) d = c.axis(d, rank);
  std::vector<onnx::AttributeProto> attributes{OnnxIntAttribute("keepdims", keepdim ? 1 : 0)};
  if (op_type == "ReduceSum") return c.add(op_type, {x, dims.empty() ? "" : c.graph().int64s(dims)}, attributes);
  if (!dims.empty()) attributes.push_back(OnnxIntsAttribute("axes", dims));
  return c.add(op_type, {x}, attributes);
}

/// aten::sum/mean/prod/amax/amin: (x, dtype) over all, or (x, dims, keepdim[, dtype]).
OnnxMapping Reduction(const std::string& op_type) {
  return [op_type](OnnxOpContext& c) {
    const std::string x = c.tensor(0, c.output_dtype());
    const bool over_dims = c.inputs() >= 3;  // not (x, dtype)
    std::vector<int64_t> dims;
    bool keepdim = false;
    if (over_dims && !c.none(1)) dims = c.integers(1);
    if (over_dims) keepdim = c.boolean(2);
    c.set(0, Reduce(c, op_type, x, dims, keepdim));
  };
}

/// aten::max and aten::min: of all elements (x), along a dimension with indices (x, dim, keepdim),
/// or elementwise (x, other).
OnnxMapping Extreme(const std::string& reduce, const std::string& arg, const std::string& elementwise) {
  return [=](OnnxOpContext& c) {
    const at::ScalarType dtype = c.output_dtype();
    if (c.inputs() == 1) {
      c.set(0, Reduce(c, reduce, c.tensor(0), {}, false));
    } else if (c.inputs() == 2) {
      c.set(0, c.add(elementwise, {c.tensor(0, dtype), c.tensor(1, dtype)}));
    } else {
      const int64_t dim = c.axis(c.integer(1), c.rank(0));
      const bool keepdim = c.boolean(2);
      c.set(0, Reduce(c, reduce, c.tensor(0), {dim}, keepdim));
      c.set(1, c.add(arg, {c.tensor(0)}, {OnnxIntAttribute("axis", dim), OnnxIntAttribute("keepdims", keepdim)}));
    }
  };
}

/// aten::argmax/argmin(x, dim, keepdim); dim None: over the flattened tensor.
OnnxMapping ArgExtreme(const std::string& op_type) {
  return [op_type](OnnxOpContext& c) {
    const bool keepdim = c.inputs() > 2 && c.boolean(2);
    if (c.none(1)) {
      if (keepdim) c.fail("with dim=None and keepdim=true has no ONNX mapping");
      const std::string flat = c.add("Reshape", {c.tensor(0), c.graph().int64s({-1})});
      c.set(0, c.add(op_type, {flat}, {OnnxIntAttribute("axis", 0), OnnxIntAttribute("keepdims", 0)}));
      return;
    }
    const int64_t dim = c.axis(c.integer(1), c.rank(0));
    c.set(0, c.add(op_type, {c.tensor(0)}, {OnnxIntAttribute("axis", dim), OnnxIntAttribute("keepdims", keepdim)}));
  };
}

/// A tensor of the output's dtype filled with `fill`, of the shape `shape`.
std::string Filled(OnnxOpContext& c, const std::string& shape, double fill) {
  const at::Tensor value = at::full({1}, fill, at::TensorOptions().dtype(c.output_dtype()));
  return c.add("ConstantOfShape", {shape}, {OnnxTensorAttribute("value", value)});
}

/// aten::zeros/ones (sizes, ...) and aten::full (sizes, value, ...) of sizes the request decides.
OnnxMapping FilledOfSizes(double fill, bool value_given) {
  return [fill, value_given](OnnxOpContext& c) {
    c.set(0, Filled(c, c.integers_tensor(0), value_given ? c.number(1) : fill));
  };
}

/// aten::zeros_like/ones_like (x, ...) and aten::full_like (x, value, ...).
OnnxMapping FilledLike(double fill, bool value_given) {
  return [fill, value_given](OnnxOpContext& c) {
    c.set(0, Filled(c, c.add("Shape", {c.tensor(0)}), value_given ? c.number(1) : fill));
  };
}

/// aten::arange: (end, ...), (start, end, ...) or (start, end, step, ...) by the count of inputs.
void Arange(OnnxOpContext& c) {
  const at::ScalarType dtype = c.output_dtype();
  const size_t numbers = c.inputs() - 4;  // dtype, layout, device and pin_memory follow
  const std::string start = numbers >= 2 ? c.tensor(0, dtype) : c.graph().scalar(0, dtype);
  const std::string end = c.tensor(numbers >= 2 ? 1 : 0, dtype);
  const std::string step = numbers >= 3 ? c.tensor(2, dtype) : c.graph().scalar(1, dtype);
  c.set(0, c.add("Range", {start, end, step}));
}

/// aten::triu/tril(x, diagonal): ONNX's Trilu (opset 14).
OnnxMapping Triangle(bool upper) {
  return [upper](OnnxOpContext& c) {
    if (c.opset() < 14) c.fail("needs ONNX's Trilu, from opset 14");
    const std::string k = c.inputs() > 1 ? c.tensor(1, at::kLong) : c.graph().scalar(0, at::kLong);
    c.set(0, c.add("Trilu", {c.tensor(0), k}, {OnnxIntAttribute("upper", upper ? 1 : 0)}));
  };
}

/// aten::index(x, indices): one index tensor of integers, on one dimension (a Gather).
void Index(OnnxOpContext& c) {
  const OnnxValue& list = c.input(1);
  std::vector<OnnxValue> elements = list.elements;
  if (!list.dynamic) {
    for (const c10::IValue& element : list.example[0].toListRef()) {
      OnnxValue value;
      value.example = {element, element};
      elements.push_back(value);
    }
  }
  int64_t dim = -1;
  for (size_t d = 0; d < elements.size(); ++d) {
    if (elements[d].example[0].isNone()) continue;
    if (dim >= 0) c.fail("indexes several dimensions at once (advanced indexing)");
    dim = static_cast<int64_t>(d);
  }
  if (dim < 0) c.fail("has no index tensor");
  const OnnxValue& index = elements[dim];
  if (index.example[0].toTensor().scalar_type() == at::kBool) c.fail("indexes with a mask (advanced indexing)");
  std::string name = index.name;
  if (!index.dynamic) name = c.graph().initializer(index.example[0].toTensor().to(at::kLong), "index");
  c.set(0, c.add("Gather", {c.tensor(0), name}, {OnnxIntAttribute("axis", dim)}));
}

/// aten::constant_pad_nd(x, pad, value): pad holds (before, after) pairs from the last dimension.
void ConstantPad(OnnxOpContext& c) {
  const int64_t rank = c.rank(0);
  const std::vector<int64_t> pad = c.integers(1);
  if (pad.size() % 2 != 0 || static_cast<int64_t>(pad.size()) > 2 * rank) c.fail("has a pad list of odd length");
  std::vector<int64_t> pads(static_cast<size_t>(2 * rank), 0);
  for (size_t k = 0; k < pad.size() / 2; ++k) {
    const int64_t d = rank - 1 - static_cast<int64_t>(k);
    pads[d] = pad[2 * k];
    pads[d + rank] = pad[2 * k + 1];
  }
  const at::ScalarType dtype = c.output_dtype();
  const std::string value = c.inputs() > 2 && !c.none(2) ? c.tensor(2, dtype) : c.graph().scalar(0, dtype);
  c.set(0, c.add("Pad", {c.tensor(0), c.graph().int64s(pads), value}, {OnnxStringAttribute("mode", "constant")}));
}

}  // namespace
}  // namespace onnx_tensor_ops

void AddOnnxTensorMappings(OnnxMappings& m) {
  using namespace onnx_tensor_ops;
  m["aten::view"] = Reshape;
  m["aten::reshape"] = Reshape;
  m["aten::_reshape_alias"] = Reshape;
  for (const char* as : {"aten::view_as", "aten::reshape_as"})
    m[as] = [](OnnxOpContext& c) { c.set(0, c.add("Reshape", {c.tensor(0), c.add("Shape", {c.tensor(1)})})); };
  m["aten::flatten"] = Flatten;
  m["aten::unsqueeze"] = [](OnnxOpContext& c) {
    const int64_t axis = c.axis(c.integer(1), c.rank(0) + 1);
    c.set(0, c.add("Unsqueeze", {c.tensor(0), c.graph().int64s({axis})}));
  };
  m["aten::squeeze"] = Squeeze;
  m["aten::expand"] = Expand;
  m["aten::expand_as"] = [](OnnxOpContext& c) {
    c.set(0, c.add("Expand", {c.tensor(0), c.add("Shape", {c.tensor(1)})}));
  };
  m["aten::t"] = [](OnnxOpContext& c) {
    if (c.rank(0) < 2) return c.set_input(0, 0);
    TransposeBy(c, {1, 0});
  };
  m["aten::transpose"] = Transpose;
  m["aten::swapaxes"] = Transpose;
  m["aten::swapdims"] = Transpose;
  m["aten::permute"] = [](OnnxOpContext& c) {
    std::vector<int64_t> perm = c.integers(1);
    for (int64_t& d : perm) d = c.axis(d, c.rank(0));
    TransposeBy(c, perm);
  };

  m["aten::select"] = [](OnnxOpContext& c) {
    const int64_t dim = c.axis(c.integer(1), c.rank(0));
    c.set(0, c.add("Gather", {c.tensor(0), c.tensor(2, at::kLong)}, {OnnxIntAttribute("axis", dim)}));
  };
  m["aten::slice"] = [](OnnxOpContext& c) { Slice(c, /*narrow=*/false); };
  m["aten::narrow"] = [](OnnxOpContext& c) { Slice(c, /*narrow=*/true); };
  m["aten::index_select"] = [](OnnxOpContext& c) {
    const int64_t dim = c.axis(c.integer(1), c.rank(0));
    c.set(0, c.add("Gather", {c.tensor(0), c.tensor(2, at::kLong)}, {OnnxIntAttribute("axis", dim)}));
  };
  m["aten::embedding"] = [](OnnxOpContext& c) {
    c.set(0, c.add("Gather", {c.tensor(0), c.tensor(1, at::kLong)}, {OnnxIntAttribute("axis", 0)}));
  };
  m["aten::gather"] = [](OnnxOpContext& c) {
    const int64_t dim = c.axis(c.integer(1), c.rank(0));
    c.set(0, c.add("GatherElements", {c.tensor(0), c.tensor(2, at::kLong)}, {OnnxIntAttribute("axis", dim)}));
  };
  m["aten::index"] = Index;
  m["aten::constant_pad_nd"] = ConstantPad;
  m["aten::repeat"] = [](OnnxOpContext& c) {
    const std::vector<int64_t> repeats = c.integers(1);
    std::string x = c.tensor(0);
    const int64_t extra = static_cast<int64_t>(repeats.size()) - c.rank(0);
    if (extra < 0) c.fail("repeats fewer dimensions than the tensor has");
    if (extra > 0) {
      std::vector<int64_t> leading;
      for (int64_t d = 0; d < extra; ++d) leading.push_back(d);
      x = c.add("Unsqueeze", {x, c.graph().int64s(leading)});
    }
    c.set(0, c.add("Tile", {x, c.graph().int64s(repeats)}));
  };

  m["aten::cat"] = [](OnnxOpContext& c) {
    const int64_t dim = c.axis(c.integer(1), c.output_rank());
    c.set(0, c.add("Concat", c.tensors(0, c.output_dtype()), {OnnxIntAttribute("axis", dim)}));
  };
  m["aten::concat"] = m["aten::cat"];
  m["aten::stack"] = [](OnnxOpContext& c) {
    const int64_t dim = c.axis(c.integer(1), c.output_rank());
    std::vector<std::string> parts = c.tensors(0, c.output_dtype());
    for (std::string& part : parts) part = c.add("Unsqueeze", {part, c.graph().int64s({dim})});
    c.set(0, c.add("Concat", parts, {OnnxIntAttribute("axis", dim)}));
  };
  for (const char* chunk : {"aten::chunk", "aten::unsafe_chunk"}) {
    m[chunk] = [](OnnxOpContext& c) {
      const int64_t dim = c.axis(c.integer(2), c.rank(0));
      const int64_t chunks = c.integer(1);
      const int64_t size = c.sizes(0).at(dim);
      if (chunks <= 0) c.fail("makes " + std::to_string(chunks) + " chunks; expected at least 1");
      SplitInto(c, dim, Pieces(c, dim, size < 0 ? 1 : (size + chunks - 1) / chunks), false);
    };
  }
  for (const char* split : {"aten::split", "aten::unsafe_split", "aten::split_with_sizes"}) {
    m[split] = [](OnnxOpContext& c) {
      const int64_t dim = c.axis(c.integer(2), c.rank(0));
      const std::vector<int64_t> sizes = c.input(1).example[0].isInt() ? Pieces(c, dim, c.integer(1)) : c.integers(1);
      SplitInto(c, dim, sizes, false);
    };
  }
  m["aten::unbind"] = [](OnnxOpContext& c) {
    const int64_t dim = c.axis(c.integer(1), c.rank(0));
    SplitInto(c, dim, Pieces(c, dim, 1), /*squeeze=*/true);
  };

  m["aten::sum"] = Reduction("ReduceSum");
  m["aten::mean"] = Reduction("ReduceMean");
  m["aten::prod"] = [](OnnxOpContext& c) {  // (x, dtype) or (x, dim, keepdim, dtype)
    const std::string x = c.tensor(0, c.output_dtype());
    if (c.inputs() <= 2) return c.set(0, Reduce(c, "ReduceProd", x, {}, false));
    c.set(0, Reduce(c, "ReduceProd", x, {c.integer(1)}, c.boolean(2)));
  };
  m["aten::amax"] = Reduction("ReduceMax");
  m["aten::amin"] = Reduction("ReduceMin");
  m["aten::max"] = Extreme("ReduceMax", "ArgMax", "Max");
  m["aten::min"] = Extreme("ReduceMin", "ArgMin", "Min");
  m["aten::argmax"] = ArgExtreme("ArgMax");
  m["aten::argmin"] = ArgExtreme("ArgMin");
  m["aten::cumsum"] = [](OnnxOpContext& c) {
    const int64_t dim = c.axis(c.integer(1), c.rank(0));
    c.set(0, c.add("CumSum", {c.tensor(0, c.output_dtype()), c.graph().scalar(dim, at::kLong)}));
  };

  m["aten::zeros"] = FilledOfSizes(0, false);
  m["aten::ones"] = FilledOfSizes(1, false);
  m["aten::full"] = FilledOfSizes(0, true);
  m["aten::zeros_like"] = FilledLike(0, false);
  m["aten::ones_like"] = FilledLike(1, false);
  m["aten::full_like"] = FilledLike(0, true);
  m["aten::arange"] = Arange;
  m["aten::triu"] = Triangle(true);
  m["aten::tril"] = Triangle(false);

  // Sizes and the lists and numbers that carry them.
  m["aten::size"] = [](OnnxOpContext& c) {
    const std::string shape = c.add("Shape", {c.tensor(0)});
    if (c.inputs() > 1) {
      const int64_t dim = c.axis(c.integer(1), c.rank(0));
      c.set(0, c.add("Gather", {shape, c.graph().scalar(dim, at::kLong)}, {OnnxIntAttribute("axis", 0)}));
      return;
    }
    std::vector<std::string> sizes;
    const std::vector<int64_t> known = c.sizes(0);
    for (size_t d = 0; d < known.size(); ++d)
      sizes.push_back(known[d] >= 0 ? ""
                                    : c.add("Gather", {shape, c.graph().scalar(static_cast<int64_t>(d), at::kLong)},
                                            {OnnxIntAttribute("axis", 0)}));
    c.set_list(0, sizes);
  };
  m["aten::numel"] = [](OnnxOpContext& c) {
    c.set(0, c.add("ReduceProd", {c.add("Shape", {c.tensor(0)})}, {OnnxIntAttribute("keepdims", 0)}));
  };
  for (const char* construct : {"prim::ListConstruct", "prim::TupleConstruct"}) {
    m[construct] = [](OnnxOpContext& c) {
      std::vector<OnnxValue> elements;
      for (size_t i = 0; i < c.inputs(); ++i) elements.push_back(c.input(i));
      c.set_elements(0, std::move(elements));
    };
  }
  for (const char* unpack : {"prim::ListUnpack", "prim::TupleUnpack"}) {
    m[unpack] = [](OnnxOpContext& c) {
      const std::vector<OnnxValue>& elements = c.input(0).elements;
      for (size_t o = 0; o < elements.size(); ++o) c.set_value(o, elements[o]);
    };
  }
  m["aten::__getitem__"] = [](OnnxOpContext& c) {
    const std::vector<OnnxValue>& elements = c.input(0).elements;
    int64_t index = c.integer(1);
    if (index < 0) index += static_cast<int64_t>(elements.size());
    if (index < 0 || index >= static_cast<int64_t>(elements.size())) c.fail("indexes past the list's end");
    c.set_value(0, elements[index]);
  };
}

}  // namespace est
