// ParseExampleBatch: a batch of tf.train.Example records read from their wire format
// straight into one tensor per feature, as tf.io.parse_example parses a batch.

#include <algorithm>
#include <cstring>
#include <memory>
#include <utility>

#include "common/error.h"
#include "data/dataset.h"
#include "data/example.h"
#include "data/example/example_fields.h"
#include "data/example/feature_values.h"

namespace est::data {
namespace {

/// The values of one feature in each record of a batch.
struct Column {
  const FeatureValues* first;  ///< record 0's
  size_t stride;               ///< from one record's values to the next's
  size_t records;

  const FeatureValues& operator[](size_t record) const { return first[record * stride]; }
};

/// The batch being parsed, as errors name it.
struct BatchName {
  const std::string& name;  ///< "the batch", "input 'examples'"
};

/// Runs `parse` on the values of record `record` of `batch`, naming the record in a DataError.
template <typename Parse>
auto InRecord(const BatchName& batch, size_t record, Parse parse) {
  try {
    return parse();
  } catch (const DataError& e) {
    EST_THROW(DataError, "record ", record, " of ", batch.name, ": tf.train.Example: ", e.what());
  }
}

/// Whether a feature's values are written straight into its batch tensor: numbers, and bytes
/// turned into ids. Bytes decoded into tensors are parsed per record and batched.
bool WrittenDirectly(const FeatureSpec& spec) {
  return spec.type() != FeatureType::kBytes || static_cast<bool>(spec.bytes_to_ids());
}

at::ScalarType DtypeOf(const FeatureSpec& spec) {
  return spec.type() == FeatureType::kFloat32 ? at::kFloat : at::kLong;
}

/// How many numbers one value of `spec` writes: ids_per_value for ids, else 1.
int64_t NumbersPerValue(const FeatureSpec& spec) {
  return spec.type() == FeatureType::kBytes ? spec.ids_per_value() : 1;
}

/// Writes the `count` values of one record at `out`.
void WriteValues(const FeatureSpec& spec, const std::string& name, const FeatureValues& values, int64_t count,
                 void* out) {
  if (spec.type() == FeatureType::kBytes) {
    values.write_ids(spec, name, count, static_cast<int64_t*>(out));
  } else {
    values.write_numbers(spec.type(), out);
  }
}

/// The shape one record of a FixedLen feature parses to: its shape, and [ids_per_value] after
/// it for ids of more than one number.
std::vector<int64_t> RecordShape(const FeatureSpec& spec) {
  std::vector<int64_t> shape = spec.shape();
  if (NumbersPerValue(spec) > 1) shape.push_back(NumbersPerValue(spec));
  return shape;
}

/// Whether a record that lacks the feature can take its default straight into the batch: the
/// default has the record's shape and dtype (ids' defaults are given in their parsed shape).
bool DefaultFits(const FeatureSpec& spec, const std::vector<int64_t>& record_shape) {
  const at::Tensor& value = spec.default_tensor();
  return !value.defined() ||
         (value.sizes() == at::IntArrayRef(record_shape) && value.scalar_type() == DtypeOf(spec));
}

/// [records, shape...] of a FixedLen feature written directly; undefined where a record's
/// default does not fit the batch (the caller then batches the records' tensors).
at::Tensor FixedLenColumn(const FeatureSpec& spec, const std::string& name, const Column& column,
                          const BatchName& batch_name) {
  const std::vector<int64_t> record_shape = RecordShape(spec);
  int64_t expected = 1;
  for (int64_t size : spec.shape()) expected *= size;
  if (!DefaultFits(spec, record_shape)) return {};
  std::vector<int64_t> shape{static_cast<int64_t>(column.records)};
  shape.insert(shape.end(), record_shape.begin(), record_shape.end());
  at::Tensor batch = HostTensor(shape, DtypeOf(spec));
  const size_t row_bytes = static_cast<size_t>(expected * NumbersPerValue(spec)) * batch.element_size();
  const at::Tensor default_value = spec.default_tensor().defined() ? spec.default_tensor().contiguous() : at::Tensor();
  auto* out = static_cast<char*>(batch.data_ptr());
  for (size_t i = 0; i < column.records; ++i, out += row_bytes) {
    InRecord(batch_name, i, [&] {
      const FeatureValues& values = column[i];
      if (values.missing()) {
        EST_CHECK(default_value.defined(), DataError, "feature '", name,
                  "' is missing from the record and its spec has no default value");
        if (row_bytes > 0) std::memcpy(out, default_value.data_ptr(), row_bytes);
        return 0;
      }
      const int64_t count = values.count(spec, name);
      EST_CHECK(count == expected, DataError, "feature '", name, "' has ", count, " ", FeatureTypeName(spec.type()),
                " value(s); its shape ", DescribeShape(spec.shape()), " needs ", expected);
      WriteValues(spec, name, values, count, out);
      return 0;
    });
  }
  return batch;
}

/// [records, longest(, ids_per_value)] of a VarLen feature, each record's values padded at the
/// end with zeros, and their counts in `lengths` ([records] int64).
at::Tensor VarLenColumn(const FeatureSpec& spec, const std::string& name, const Column& column,
                        const BatchName& batch_name, at::Tensor* lengths) {
  *lengths = HostTensor({static_cast<int64_t>(column.records)}, at::kLong);
  int64_t* counts = lengths->data_ptr<int64_t>();
  int64_t longest = 0;
  for (size_t i = 0; i < column.records; ++i) {
    counts[i] = InRecord(batch_name, i, [&] { return column[i].count(spec, name); });
    longest = std::max(longest, counts[i]);
  }
  const int64_t width = NumbersPerValue(spec);
  std::vector<int64_t> shape{static_cast<int64_t>(column.records), longest};
  if (width > 1) shape.push_back(width);
  at::Tensor batch = HostTensor(shape, DtypeOf(spec));
  const size_t value_bytes = static_cast<size_t>(width) * batch.element_size();
  auto* out = static_cast<char*>(batch.data_ptr());
  for (size_t i = 0; i < column.records; ++i, out += longest * value_bytes) {
    InRecord(batch_name, i, [&] {
      WriteValues(spec, name, column[i], counts[i], out);
      return 0;
    });
    if (counts[i] < longest) std::memset(out + counts[i] * value_bytes, 0, (longest - counts[i]) * value_bytes);
  }
  return batch;
}

class ExampleBatchParser {
 public:
  ExampleBatchParser(ExampleSpec spec, std::string label_key, std::string batch_name)
      : spec_(std::move(spec)),
        label_key_(std::move(label_key)),
        batch_name_(std::move(batch_name)),
        index_(IndexOf(spec_)) {
    EST_CHECK(!spec_.empty(), ConfigError, "ParseExampleBatch: the spec has no features");
    CheckLengthNames(NamesWithLength(spec_, false), {&spec_}, "ParseExampleBatch");
    CheckLabelKey(spec_, label_key_, "ParseExampleBatch");
  }

  Element operator()(const std::vector<std::string_view>& records) const {
    EST_CHECK(!records.empty(), DataError, "ParseExampleBatch: a batch of no records");
    const size_t features = index_.size();
    std::vector<FeatureValues> values(records.size() * features);
    std::vector<std::string_view> messages;
    for (size_t i = 0; i < records.size(); ++i) {
      InRecord(BatchName{batch_name_}, i, [&] {
        ExampleFeaturesMessages(records[i], &messages);
        GatherFeatures(messages, index_, &values[i * features]);
        return 0;
      });
    }
    Element batch;
    std::vector<Element> per_record;  // the features not written directly, as ParseExample gives them
    size_t f = 0;
    for (const auto& [name, spec] : spec_) {
      const Column column{values.data() + f++, features, records.size()};
      at::Tensor tensor;
      if (WrittenDirectly(spec) && spec.fixed_length()) {
        tensor = FixedLenColumn(spec, name, column, BatchName{batch_name_});
      } else if (WrittenDirectly(spec)) {
        at::Tensor lengths;
        tensor = VarLenColumn(spec, name, column, BatchName{batch_name_}, &lengths);
        batch.features.emplace(name + kLengthSuffix, std::move(lengths));
      }
      if (!tensor.defined()) {
        AddPerRecord(spec, name, column, &per_record);
      } else if (name == label_key_) {
        batch.labels = std::move(tensor);
      } else {
        batch.features.emplace(name, std::move(tensor));
      }
    }
    if (!per_record.empty()) {
      Element rest = BatchElements(per_record, /*padded=*/true);
      for (auto& [name, tensor] : rest.features) batch.features.emplace(name, std::move(tensor));
      if (rest.labels.defined()) batch.labels = std::move(rest.labels);
    }
    return batch;
  }

 private:
  /// Adds the tensor ParseExample makes of the feature in each record to `per_record`. A
  /// FixedLen feature's tensors must have one shape (its values must decode alike).
  void AddPerRecord(const FeatureSpec& spec, const std::string& name, const Column& column,
                    std::vector<Element>* per_record) const {
    per_record->resize(column.records);
    at::Tensor first;
    for (size_t i = 0; i < column.records; ++i) {
      Element& element = (*per_record)[i];
      InRecord(BatchName{batch_name_}, i, [&] {
        if (!spec.fixed_length()) {
          int64_t length = 0;
          element.features.emplace(name, column[i].var_len(spec, name, &length));
          element.features.emplace(name + kLengthSuffix, HostScalar(length));
          return 0;
        }
        at::Tensor tensor = column[i].fixed_len(spec, name);
        if (i == 0) first = tensor;
        EST_CHECK(tensor.sizes() == first.sizes() && tensor.scalar_type() == first.scalar_type(), DataError,
                  "FixedLen feature '", name, "' parses to ", tensor.scalar_type(), " ", tensor.sizes(), " but to ",
                  first.scalar_type(), " ", first.sizes(), " in record 0; a FixedLen feature has one shape in "
                  "every record");
        (name == label_key_ ? element.labels : element.features[name]) = std::move(tensor);
        return 0;
      });
    }
  }

  ExampleSpec spec_;
  std::string label_key_;
  std::string batch_name_;
  SpecIndex index_;
};

}  // namespace

BatchRecordParser ParseExampleBatch(ExampleSpec spec, std::string label_key, std::string batch_name) {
  auto parser =
      std::make_shared<const ExampleBatchParser>(std::move(spec), std::move(label_key), std::move(batch_name));
  return [parser](const std::vector<std::string_view>& records) { return (*parser)(records); };
}

}  // namespace est::data
