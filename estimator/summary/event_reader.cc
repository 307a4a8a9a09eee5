#include "estimator/summary/event_reader.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "common/error.h"
#include "common/tfrecord_file.h"
#include "estimator/summary/event.pb.h"
#include "estimator/summary/event_file_name.h"

namespace est {

std::vector<ScalarEvent> ReadScalarEvents(const std::string& event_file) {
  tfrecord::RecordFileReader reader(event_file);
  std::vector<ScalarEvent> scalars;
  std::string record;
  for (;;) {
    const uint64_t offset = reader.offset();
    if (!reader.next(&record)) break;
    // protobuf parses at most INT_MAX bytes at once (ParseFromArray takes an int).
    EST_CHECK(record.size() <= static_cast<size_t>(std::numeric_limits<int>::max()), DataError,
              "corrupted record in '", event_file, "' at offset ", offset, ": ", record.size(),
              " bytes, larger than an Event can be");
    tfevents::Event event;
    EST_CHECK(event.ParseFromArray(record.data(), static_cast<int>(record.size())), DataError,
              "corrupted record in '", event_file, "' at offset ", offset, ": not an Event");
    if (!event.has_summary()) continue;
    for (const tfevents::Summary::Value& value : event.summary().value()) {
      if (value.value_case() != tfevents::Summary::Value::kSimpleValue) continue;
      scalars.push_back({event.step(), event.wall_time(), value.tag(), value.simple_value()});
    }
  }
  return scalars;
}

std::vector<std::string> ListEventFiles(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> names;
  std::error_code error;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
    const std::string name = entry.path().filename().string();
    if (IsEventFileName(name) && entry.is_regular_file(error)) names.push_back(name);
  }
  std::sort(names.begin(), names.end(),
            [](const std::string& a, const std::string& b) { return EventFileNameLess(a, b); });
  std::vector<std::string> paths;
  paths.reserve(names.size());
  for (const std::string& name : names) paths.push_back((fs::path(dir) / name).string());
  return paths;
}

std::map<int64_t, std::map<std::string, double>> ReadEvalMetrics(const std::string& eval_dir) {
  std::map<int64_t, std::map<std::string, double>> metrics;
  for (const std::string& file : ListEventFiles(eval_dir)) {
    for (const ScalarEvent& scalar : ReadScalarEvents(file)) metrics[scalar.step][scalar.tag] = scalar.value;
  }
  return metrics;
}

}  // namespace est
