// ONNX mappings of elementwise operators: arithmetic (with add's and sub's alpha), comparisons
// and logic, where/masked_fill/clamp, activations, casts and identities. Inputs are cast to the
// dtype LibTorch computes in (the output's, or the promoted one of a comparison), as ONNX's
// operators take operands of one type.

#include <ATen/ATen.h>

#include <cmath>

#include "estimator/export/onnx_op_context.h"

namespace est {
namespace onnx_elementwise_ops {
namespace {

/// Registers `mapping` as `kind` and its in-place variant (`kind` + "_").
void AddWithInPlace(OnnxMappings& mappings, const std::string& kind, const OnnxMapping& mapping) {
  mappings[kind] = mapping;
  mappings[kind + "_"] = mapping;
}

/// The dtype LibTorch promotes inputs `i` and `j` to (tensors or numbers).
at::ScalarType PromotedDtype(const OnnxOpContext& c, size_t i, size_t j) {
  const c10::IValue& a = c.input(i).example[0];
  const c10::IValue& b = c.input(j).example[0];
  if (a.isTensor() && b.isTensor()) return at::result_type(a.toTensor(), b.toTensor());
  if (a.isTensor()) return at::result_type(a.toTensor(), b.toScalar());
  if (b.isTensor()) return at::result_type(a.toScalar(), b.toTensor());
  return at::result_type(a.toScalar(), b.toScalar());
}

/// Input `i`, a number, as a Scalar of its own kind.
at::Scalar ScalarOf(const OnnxOpContext& c, size_t i) {
  const c10::IValue& value = c.input(i).example[0];
  if (value.isInt()) return value.toInt();
  if (value.isBool()) return value.toBool();
  return c.number(i);
}

/// `op_type` of input 0 in the output's dtype.
OnnxMapping Unary(const std::string& op_type) {
  return [op_type](OnnxOpContext& c) { c.set(0, c.add(op_type, {c.tensor(0, c.output_dtype())})); };
}

/// `op_type` of inputs 0 and 1 in the output's dtype; input `alpha` (when not 0) scales input 1.
OnnxMapping Arithmetic(const std::string& op_type, size_t alpha = 0) {
  return [op_type, alpha](OnnxOpContext& c) {
    const at::ScalarType dtype = c.output_dtype();
    const std::string a = c.tensor(0, dtype);
    std::string b = c.tensor(1, dtype);
    if (alpha != 0 && c.inputs() > alpha && !c.none(alpha) && c.number(alpha) != 1)
      b = c.add("Mul", {b, c.graph().scalar(ScalarOf(c, alpha), dtype)});
    c.set(0, c.add(op_type, {a, b}));
  };
}

/// floor(a / b) in `dtype` (integers through float64, as ONNX's Div truncates them).
std::string FloorDivide(OnnxOpContext& c, at::ScalarType dtype) {
  if (at::isFloatingType(dtype)) return c.add("Floor", {c.add("Div", {c.tensor(0, dtype), c.tensor(1, dtype)})});
  const std::string quotient = c.add("Div", {c.tensor(0, at::kDouble), c.tensor(1, at::kDouble)});
  return c.cast(c.add("Floor", {quotient}), at::kDouble, dtype);
}

/// aten::div, with rounding_mode None, "trunc" or "floor".
void Divide(OnnxOpContext& c) {
  const at::ScalarType dtype = c.output_dtype();
  const std::string mode = c.inputs() > 2 && !c.none(2) ? c.text(2) : "";
  if (mode.empty() || (mode == "trunc" && !at::isFloatingType(dtype))) {
    c.set(0, c.add("Div", {c.tensor(0, dtype), c.tensor(1, dtype)}));
  } else if (mode == "floor") {
    c.set(0, FloorDivide(c, dtype));
  } else if (mode == "trunc") {  // sign(q) · floor(|q|)
    const std::string quotient = c.add("Div", {c.tensor(0, dtype), c.tensor(1, dtype)});
    c.set(0, c.add("Mul", {c.add("Sign", {quotient}), c.add("Floor", {c.add("Abs", {quotient})})}));
  } else {
    c.fail("has rounding_mode '" + mode + "'; expected None, 'trunc' or 'floor'");
  }
}

/// aten::remainder: a − floor(a / b) · b, the sign of b's (ONNX's Mod with fmod=0 for integers).
void Remainder(OnnxOpContext& c) {
  const at::ScalarType dtype = c.output_dtype();
  const std::string a = c.tensor(0, dtype);
  const std::string b = c.tensor(1, dtype);
  if (!at::isFloatingType(dtype)) {
    c.set(0, c.add("Mod", {a, b}, {OnnxIntAttribute("fmod", 0)}));
    return;
  }
  const std::string quotient = c.add("Floor", {c.add("Div", {a, b})});
  c.set(0, c.add("Sub", {a, c.add("Mul", {quotient, b})}));
}

/// A comparison `op_type` of inputs 0 and 1 in their promoted dtype; `negate` for ne.
OnnxMapping Comparison(const std::string& op_type, bool negate = false) {
  return [op_type, negate](OnnxOpContext& c) {
    const at::ScalarType dtype = PromotedDtype(c, 0, 1);
    const std::string result = c.add(op_type, {c.tensor(0, dtype), c.tensor(1, dtype)});
    c.set(0, negate ? c.add("Not", {result}) : result);
  };
}

/// A logical `op_type` of inputs as booleans.
OnnxMapping Logical(const std::string& op_type) {
  return [op_type](OnnxOpContext& c) {
    std::vector<std::string> operands;
    for (size_t i = 0; i < c.inputs(); ++i) operands.push_back(c.tensor(i, at::kBool));
    c.set(0, c.cast(c.add(op_type, operands), at::kBool, c.output_dtype()));
  };
}

/// aten::__and__ and aten::__or__: logical on booleans (bitwise needs opset 18).
OnnxMapping BooleanOnly(const std::string& op_type) {
  return [op_type](OnnxOpContext& c) {
    if (c.output_dtype() != at::kBool) c.fail("on integers needs ONNX's bitwise operators (opset 18)");
    c.set(0, c.add(op_type, {c.tensor(0, at::kBool), c.tensor(1, at::kBool)}));
  };
}

/// Input 0 limited to [input `low`, input `high`] (either None for no limit).
OnnxMapping Clamp(size_t low, size_t high) {
  return [low, high](OnnxOpContext& c) {
    const at::ScalarType dtype = c.output_dtype();
    std::string result = c.tensor(0, dtype);
    if (low != 0 && !c.none(low)) result = c.add("Max", {result, c.tensor(low, dtype)});
    if (high != 0 && !c.none(high)) result = c.add("Min", {result, c.tensor(high, dtype)});
    c.set(0, result);
  };
}

/// Input 0 limited to [low, high].
OnnxMapping ClampTo(double low, double high) {
  return [low, high](OnnxOpContext& c) {
    const at::ScalarType dtype = c.output_dtype();
    const std::string clipped = c.add("Max", {c.tensor(0, dtype), c.graph().scalar(low, dtype)});
    c.set(0, c.add("Min", {clipped, c.graph().scalar(high, dtype)}));
  };
}

/// aten::gelu: x·Φ(x), exactly (erf) or with tanh's approximation.
void Gelu(OnnxOpContext& c) {
  const at::ScalarType dtype = c.output_dtype();
  const std::string x = c.tensor(0, dtype);
  const std::string approximate = c.inputs() > 1 ? c.text(1) : "none";
  std::string inner;
  if (approximate == "none") {
    inner = c.add("Erf", {c.add("Mul", {x, c.graph().scalar(M_SQRT1_2, dtype)})});
  } else if (approximate == "tanh") {
    const std::string cube = c.add("Mul", {c.add("Mul", {x, x}), x});
    const std::string sum = c.add("Add", {x, c.add("Mul", {cube, c.graph().scalar(0.044715, dtype)})});
    inner = c.add("Tanh", {c.add("Mul", {sum, c.graph().scalar(std::sqrt(2.0 / M_PI), dtype)})});
  } else {
    c.fail("has approximate='" + approximate + "'; expected 'none' or 'tanh'");
  }
  const std::string half_x = c.add("Mul", {x, c.graph().scalar(0.5, dtype)});
  c.set(0, c.add("Mul", {half_x, c.add("Add", {inner, c.graph().scalar(1.0, dtype)})}));
}

/// aten::softplus(x, beta, threshold): x where beta·x > threshold, else log(1 + exp(beta·x)) / beta.
void Softplus(OnnxOpContext& c) {
  const at::ScalarType dtype = c.output_dtype();
  const std::string x = c.tensor(0, dtype);
  const std::string scaled = c.add("Mul", {x, c.tensor(1, dtype)});
  const std::string soft = c.add("Div", {c.add("Softplus", {scaled}), c.tensor(1, dtype)});
  const std::string linear = c.add("Greater", {scaled, c.tensor(2, dtype)});
  c.set(0, c.add("Where", {linear, x, soft}));
}

/// x · f(x) for f = Sigmoid (silu) or tanh∘softplus (mish).
OnnxMapping TimesItself(const std::vector<std::string>& chain) {
  return [chain](OnnxOpContext& c) {
    const std::string x = c.tensor(0, c.output_dtype());
    std::string f = x;
    for (const std::string& op_type : chain) f = c.add(op_type, {f});
    c.set(0, c.add("Mul", {x, f}));
  };
}

/// aten::prelu: the weight applies along dimension 1 (a weight of one element to all).
void Prelu(OnnxOpContext& c) {
  const at::ScalarType dtype = c.output_dtype();
  at::Tensor slope = c.constant(1).to(dtype);
  if (slope.numel() > 1 && c.rank(0) > 2) {
    std::vector<int64_t> shape(static_cast<size_t>(c.rank(0) - 1), 1);
    shape[0] = slope.numel();
    slope = slope.reshape(shape);
  }
  c.set(0, c.add("PRelu", {c.tensor(0, dtype), c.graph().initializer(slope, "prelu_slope")}));
}

/// The output as input 0 cast to the output's dtype (an identity where they agree).
void CastToOutput(OnnxOpContext& c) { c.set(0, c.tensor(0, c.output_dtype())); }

/// An identity for inference: dropout with train=false, and copies.
OnnxMapping Identity(size_t train = 0) {
  return [train](OnnxOpContext& c) {
    if (train != 0 && c.inputs() > train && c.boolean(train))
      c.fail("is in training mode (train=true); export a model_fn that does not drop out in Mode::kPredict");
    c.set_input(0, 0);
  };
}

}  // namespace
}  // namespace onnx_elementwise_ops

void AddOnnxElementwiseMappings(OnnxMappings& m) {
  using namespace onnx_elementwise_ops;
  AddWithInPlace(m, "aten::add", Arithmetic("Add", 2));
  AddWithInPlace(m, "aten::sub", Arithmetic("Sub", 2));
  AddWithInPlace(m, "aten::mul", Arithmetic("Mul"));
  AddWithInPlace(m, "aten::div", Divide);
  AddWithInPlace(m, "aten::true_divide", Arithmetic("Div"));
  AddWithInPlace(m, "aten::pow", Arithmetic("Pow"));
  AddWithInPlace(m, "aten::remainder", Remainder);
  m["aten::floordiv"] = [](OnnxOpContext& c) { c.set(0, FloorDivide(c, c.output_dtype())); };
  m["aten::floor_divide"] = m["aten::floordiv"];
  m["aten::rsub"] = [](OnnxOpContext& c) {  // other − alpha · self
    const at::ScalarType dtype = c.output_dtype();
    std::string self = c.tensor(0, dtype);
    if (c.inputs() > 2 && !c.none(2) && c.number(2) != 1)
      self = c.add("Mul", {self, c.graph().scalar(ScalarOf(c, 2), dtype)});
    c.set(0, c.add("Sub", {c.tensor(1, dtype), self}));
  };
  m["aten::maximum"] = Arithmetic("Max");
  m["aten::minimum"] = Arithmetic("Min");

  m["aten::eq"] = Comparison("Equal");
  m["aten::ne"] = Comparison("Equal", /*negate=*/true);
  m["aten::lt"] = Comparison("Less");
  m["aten::le"] = Comparison("LessOrEqual");
  m["aten::gt"] = Comparison("Greater");
  m["aten::ge"] = Comparison("GreaterOrEqual");
  m["aten::logical_and"] = Logical("And");
  m["aten::logical_or"] = Logical("Or");
  m["aten::logical_xor"] = Logical("Xor");
  m["aten::logical_not"] = Logical("Not");
  m["aten::__and__"] = BooleanOnly("And");
  m["aten::__or__"] = BooleanOnly("Or");
  m["aten::bitwise_not"] = [](OnnxOpContext& c) {
    if (c.output_dtype() != at::kBool) c.fail("on integers needs ONNX's bitwise operators (opset 18)");
    c.set(0, c.add("Not", {c.tensor(0, at::kBool)}));
  };
  m["aten::where"] = [](OnnxOpContext& c) {
    if (c.inputs() != 3) c.fail("with one argument (nonzero) has no ONNX mapping");
    const at::ScalarType dtype = c.output_dtype();
    c.set(0, c.add("Where", {c.tensor(0, at::kBool), c.tensor(1, dtype), c.tensor(2, dtype)}));
  };
  AddWithInPlace(m, "aten::masked_fill", [](OnnxOpContext& c) {
    const at::ScalarType dtype = c.output_dtype();
    c.set(0, c.add("Where", {c.tensor(1, at::kBool), c.tensor(2, dtype), c.tensor(0, dtype)}));
  });
  AddWithInPlace(m, "aten::clamp", Clamp(1, 2));
  AddWithInPlace(m, "aten::clip", Clamp(1, 2));
  AddWithInPlace(m, "aten::clamp_min", Clamp(1, 0));
  AddWithInPlace(m, "aten::clamp_max", Clamp(0, 1));
  AddWithInPlace(m, "aten::hardtanh", [](OnnxOpContext& c) { ClampTo(c.number(1), c.number(2))(c); });
  AddWithInPlace(m, "aten::relu6", ClampTo(0, 6));

  const std::pair<const char*, const char*> unary[] = {
      {"relu", "Relu"}, {"sigmoid", "Sigmoid"}, {"tanh", "Tanh"},   {"exp", "Exp"},     {"log", "Log"},
      {"sqrt", "Sqrt"}, {"neg", "Neg"},         {"abs", "Abs"},     {"sin", "Sin"},     {"cos", "Cos"},
      {"erf", "Erf"},   {"floor", "Floor"},     {"ceil", "Ceil"},   {"sign", "Sign"},   {"reciprocal", "Reciprocal"},
      {"round", "Round"}};
  for (const auto& [torch_name, op_type] : unary) AddWithInPlace(m, std::string("aten::") + torch_name, Unary(op_type));
  AddWithInPlace(m, "aten::rsqrt", [](OnnxOpContext& c) {
    c.set(0, c.add("Reciprocal", {c.add("Sqrt", {c.tensor(0, c.output_dtype())})}));
  });
  AddWithInPlace(m, "aten::gelu", Gelu);
  AddWithInPlace(m, "aten::silu", TimesItself({"Sigmoid"}));
  AddWithInPlace(m, "aten::mish", TimesItself({"Softplus", "Tanh"}));
  m["aten::softplus"] = Softplus;
  AddWithInPlace(m, "aten::leaky_relu", [](OnnxOpContext& c) {
    const double slope = c.inputs() > 1 ? c.number(1) : 0.01;
    c.set(0, c.add("LeakyRelu", {c.tensor(0, c.output_dtype())}, {OnnxFloatAttribute("alpha", slope)}));
  });
  AddWithInPlace(m, "aten::elu", [](OnnxOpContext& c) {
    if (c.inputs() > 3 && (c.number(2) != 1 || c.number(3) != 1)) c.fail("has a scale or input_scale other than 1");
    c.set(0, c.add("Elu", {c.tensor(0, c.output_dtype())}, {OnnxFloatAttribute("alpha", c.number(1))}));
  });
  AddWithInPlace(m, "aten::selu", Unary("Selu"));
  AddWithInPlace(m, "aten::hardsigmoid", [](OnnxOpContext& c) {
    c.set(0, c.add("HardSigmoid", {c.tensor(0, c.output_dtype())},
                   {OnnxFloatAttribute("alpha", 1.0 / 6), OnnxFloatAttribute("beta", 0.5)}));
  });
  AddWithInPlace(m, "aten::hardswish", [](OnnxOpContext& c) {
    const std::string x = c.tensor(0, c.output_dtype());
    const std::string gate =
        c.add("HardSigmoid", {x}, {OnnxFloatAttribute("alpha", 1.0 / 6), OnnxFloatAttribute("beta", 0.5)});
    c.set(0, c.add("Mul", {x, gate}));
  });
  m["aten::prelu"] = Prelu;

  for (const char* cast : {"aten::to", "aten::type_as", "aten::_to_copy", "aten::Int", "aten::Float",
                           "aten::Bool", "aten::ScalarImplicit", "prim::NumToTensor"})
    m[cast] = CastToOutput;
  for (const char* identity : {"aten::contiguous", "aten::detach", "aten::clone", "aten::alias", "aten::lift_fresh",
                               "aten::detach_copy", "aten::alias_copy"})
    m[identity] = Identity();
  for (const char* dropout : {"aten::dropout", "aten::feature_dropout", "aten::alpha_dropout",
                              "aten::feature_alpha_dropout"})
    AddWithInPlace(m, dropout, Identity(/*train=*/2));
}

}  // namespace est
