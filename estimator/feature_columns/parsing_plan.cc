#include "estimator/feature_columns/parsing_plan.h"

#include <algorithm>
#include <utility>

#include "common/error.h"

namespace est::feature_columns {
namespace {

const char* KindName(int kind) {
  static const char* const kNames[] = {"a numeric feature", "integer categories", "weights", "strings"};
  return kNames[kind];
}

}  // namespace

ParsingPlan::ParsingPlan(const std::vector<FeatureColumnPtr>& columns) {
  for (const FeatureColumnPtr& column : columns) {
    EST_CHECK(column != nullptr, ConfigError, "make_parse_example_spec: a null column");
    column->plan_parsing(*this);
  }
}

ParsingPlan::Feature& ParsingPlan::add(const std::string& key, Kind kind) {
  EST_CHECK(!key.empty(), ConfigError, "feature columns: a column reads a feature with an empty key");
  auto [it, added] = features_.try_emplace(key, Feature{kind, {}, {}, {}});
  EST_CHECK(added || it->second.kind == kind, ConfigError, "feature columns: feature \"", key, "\" is read as ",
            KindName(static_cast<int>(it->second.kind)), " by one column and as ", KindName(static_cast<int>(kind)),
            " by another; a feature is parsed one way");
  return it->second;
}

void ParsingPlan::add_numeric(const std::string& key, std::vector<int64_t> shape, at::Tensor default_value) {
  const bool known = has(key);
  Feature& entry = add(key, Kind::kNumeric);
  if (known) {
    EST_CHECK(entry.shape == shape, ConfigError, "feature columns: numeric feature \"", key,
              "\" is read with two different shapes");
    EST_CHECK(entry.default_value.defined() == default_value.defined() &&
                  (!default_value.defined() || entry.default_value.equal(default_value)),
              ConfigError, "feature columns: numeric feature \"", key, "\" is read with two different defaults");
    return;
  }
  entry.shape = std::move(shape);
  entry.default_value = std::move(default_value);
}

void ParsingPlan::add_integers(const std::string& key) { add(key, Kind::kIntegers); }

void ParsingPlan::add_floats(const std::string& key) { add(key, Kind::kFloats); }

void ParsingPlan::add_strings(const std::string& key, const std::string& use, StringToId id_of) {
  Feature& entry = add(key, Kind::kStrings);
  // Slots in the order of the uses' names: plans of the same uses agree, whatever the order of
  // their columns.
  auto place = std::lower_bound(entry.uses.begin(), entry.uses.end(), use,
                                [](const Use& existing, const std::string& name) { return existing.name < name; });
  if (place != entry.uses.end() && place->name == use) return;
  entry.uses.insert(place, Use{use, std::move(id_of)});
}

const ParsingPlan::Feature& ParsingPlan::feature(const std::string& key) const {
  const auto found = features_.find(key);
  EST_CHECK(found != features_.end(), ConfigError, "feature columns: feature \"", key,
            "\" is not in the parsing plan; build the plan from every column the model reads");
  return found->second;
}

bool ParsingPlan::is_strings(const std::string& key) const { return feature(key).kind == Kind::kStrings; }

int64_t ParsingPlan::slot(const std::string& key, const std::string& use) const {
  const Feature& entry = feature(key);
  for (size_t i = 0; i < entry.uses.size(); ++i) {
    if (entry.uses[i].name == use) return static_cast<int64_t>(i);
  }
  EST_THROW(ConfigError, "feature columns: string feature \"", key, "\" is not parsed for ", use);
}

int64_t ParsingPlan::slots(const std::string& key) const { return static_cast<int64_t>(feature(key).uses.size()); }

data::ExampleSpec ParsingPlan::example_spec() const {
  data::ExampleSpec spec;
  for (const auto& [key, entry] : features_) {
    switch (entry.kind) {
      case Kind::kNumeric: {
        data::FeatureSpec feature = data::FeatureSpec::FixedLen(data::FeatureType::kFloat32, entry.shape);
        if (entry.default_value.defined()) feature.default_value(entry.default_value);
        spec.emplace(key, std::move(feature));
        break;
      }
      case Kind::kIntegers:
        spec.emplace(key, data::FeatureSpec::VarLen(data::FeatureType::kInt64));
        break;
      case Kind::kFloats:
        spec.emplace(key, data::FeatureSpec::VarLen(data::FeatureType::kFloat32));
        break;
      case Kind::kStrings: {
        std::vector<StringToId> uses;
        for (const Use& use : entry.uses) uses.push_back(use.id_of);
        auto decode = [uses = std::move(uses)](std::string_view value, int64_t* ids) {
          for (size_t i = 0; i < uses.size(); ++i) ids[i] = uses[i](value);
        };
        spec.emplace(key, data::FeatureSpec::VarLen(data::FeatureType::kBytes)
                              .ids_decoder(std::move(decode), static_cast<int64_t>(entry.uses.size())));
        break;
      }
    }
  }
  return spec;
}

data::ExampleSpec make_parse_example_spec(const std::vector<FeatureColumnPtr>& columns) {
  return ParsingPlan(columns).example_spec();
}

}  // namespace est::feature_columns
