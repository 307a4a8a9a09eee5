#pragma once
/// TextFormatErrors: what protobuf's text-format parser finds wrong, as one line for an error
/// message ("line 3, column 7: ..."). Header-only; for the targets that link protobuf.

#include <google/protobuf/io/tokenizer.h>

#include <string>

namespace est {

/// Collects a text-format parser's errors and warnings.
class TextFormatErrors : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (!text_.empty()) text_ += "; ";
    text_ += "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": " + message;
  }
  /// The errors, "; "-separated.
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

}  // namespace est
