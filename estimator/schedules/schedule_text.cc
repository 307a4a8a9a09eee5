#include "estimator/schedules/schedule_text.h"

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "common/error.h"
#include "estimator/schedules/decay_schedules.h"

namespace est::schedules {
namespace {

// One keyword argument's value: a number, a flag or a list of numbers, as written.
struct Value {
  std::vector<double> numbers;
  bool is_list = false;
  bool is_flag = false;
  bool flag = false;
};

// Reads `text` left to right; every error quotes the whole text.
class ScheduleParser {
 public:
  explicit ScheduleParser(const std::string& text) : text_(text) {}

  std::string name() {
    skip_spaces();
    const size_t start = at_;
    while (at_ < text_.size() && std::isalnum(static_cast<unsigned char>(text_[at_]))) ++at_;
    if (at_ == start) fail("a schedule's name");
    return text_.substr(start, at_ - start);
  }

  // The arguments, as Python takes them: positional ones first, each the next of `parameters`,
  // then keyword ones.
  std::map<std::string, Value> arguments(const std::string& schedule, const std::vector<std::string>& parameters) {
    std::map<std::string, Value> arguments;
    skip_spaces();
    if (at_ == text_.size()) return arguments;
    expect('(');
    skip_spaces();
    if (!take(')')) {
      size_t positional = 0;
      bool keywords = false;
      do {
        skip_spaces();
        const size_t start = at_;
        std::string key;
        if (starts_keyword()) {
          key = word();
          expect('=');
          keywords = true;
        } else {
          if (keywords) fail_at("a keyword argument (name=value): a positional argument follows a keyword one", start);
          if (positional == parameters.size())
            fail_at(schedule + "'s " + std::to_string(parameters.size()) + " parameters at most", start);
          key = parameters[positional++];
        }
        if (!arguments.emplace(key, value()).second) fail_at("'" + key + "' given once", start);
      } while (take(','));
      expect(')');
    }
    skip_spaces();
    if (at_ != text_.size()) fail("the end after ')'");
    return arguments;
  }

  [[noreturn]] void fail(const std::string& expected) const { fail_at(expected, at_); }

 private:
  [[noreturn]] void fail_at(const std::string& expected, size_t position) const {
    EST_THROW(ConfigError, "learning-rate schedule '", text_, "': expected ", expected, " at column ", position + 1,
              "; write it as Python does, e.g. CosineDecay(decay_steps=2000, alpha=0.1)");
  }

  void skip_spaces() {
    while (at_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[at_]))) ++at_;
  }

  bool take(char c) {
    skip_spaces();
    if (at_ < text_.size() && text_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }

  void expect(char c) {
    if (!take(c)) fail(std::string("'") + c + "'");
  }

  // Whether a keyword argument ("name =") starts here, rather than a value.
  bool starts_keyword() const {
    size_t at = at_;
    if (at >= text_.size() || !(std::isalpha(static_cast<unsigned char>(text_[at])) || text_[at] == '_')) return false;
    while (at < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at])) || text_[at] == '_')) ++at;
    while (at < text_.size() && std::isspace(static_cast<unsigned char>(text_[at]))) ++at;
    return at < text_.size() && text_[at] == '=';
  }

  std::string word() {
    skip_spaces();
    start_of_word_ = at_;
    while (at_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[at_])) || text_[at_] == '_')) ++at_;
    if (at_ == start_of_word_) fail("a parameter's name");
    return text_.substr(start_of_word_, at_ - start_of_word_);
  }

  double number() {
    skip_spaces();
    const char* begin = text_.c_str() + at_;
    char* end = nullptr;
    const double parsed = std::strtod(begin, &end);
    if (end == begin || !std::isfinite(parsed)) fail("a finite number");
    at_ += static_cast<size_t>(end - begin);
    return parsed;
  }

  Value value() {
    Value parsed;
    if (take('[')) {
      parsed.is_list = true;
      if (!take(']')) {
        do parsed.numbers.push_back(number());
        while (take(','));
        expect(']');
      }
      return parsed;
    }
    skip_spaces();
    for (const auto& [spelling, flag] : {std::pair<const char*, bool>{"true", true}, {"True", true},
                                         {"false", false}, {"False", false}}) {
      const std::string word = spelling;
      if (text_.compare(at_, word.size(), word) == 0) {
        at_ += word.size();
        parsed.is_flag = true;
        parsed.flag = flag;
        return parsed;
      }
    }
    parsed.numbers.push_back(number());
    return parsed;
  }

  const std::string& text_;
  size_t at_ = 0;
  size_t start_of_word_ = 0;
};

// The keyword arguments of one schedule, taken by name and kind; what is left is unknown.
class Arguments {
 public:
  Arguments(std::string schedule, std::map<std::string, Value> values, std::vector<std::string> parameters)
      : schedule_(std::move(schedule)), values_(std::move(values)), parameters_(std::move(parameters)) {
    for (const auto& [key, value] : values_) {
      bool known = false;
      for (const auto& parameter : parameters_) known = known || parameter == key;
      EST_CHECK(known, ConfigError, schedule_, ": unknown parameter '", key, "'; it takes ", Listed());
    }
  }

  double number(const std::string& key, std::optional<double> fallback) const {
    const Value* value = find(key, fallback.has_value());
    if (value == nullptr) return *fallback;
    EST_CHECK(!value->is_list && !value->is_flag, ConfigError, schedule_, ": ", key, " must be a number");
    return value->numbers.front();
  }

  int64_t steps(const std::string& key) const {
    const double value = number(key, std::nullopt);
    EST_CHECK(value == std::floor(value) && std::abs(value) < 9.0e18, ConfigError, schedule_, ": ", key, " is ",
              value, "; expected a whole number of steps");
    return static_cast<int64_t>(value);
  }

  bool flag(const std::string& key) const {
    const Value* value = find(key, true);
    if (value == nullptr) return false;
    EST_CHECK(value->is_flag, ConfigError, schedule_, ": ", key, " must be true or false");
    return value->flag;
  }

  std::vector<double> list(const std::string& key) const {
    const Value* value = find(key, false);
    EST_CHECK(value->is_list, ConfigError, schedule_, ": ", key, " must be a list, e.g. [1000, 2000]");
    return value->numbers;
  }

 private:
  const Value* find(const std::string& key, bool optional) const {
    const auto found = values_.find(key);
    if (found != values_.end()) return &found->second;
    EST_CHECK(optional, ConfigError, schedule_, ": ", key, " is required; it takes ", Listed());
    return nullptr;
  }

  std::string Listed() const {
    std::string text;
    for (const auto& parameter : parameters_) text += (text.empty() ? "" : ", ") + parameter;
    return text;
  }

  std::string schedule_;
  std::map<std::string, Value> values_;
  std::vector<std::string> parameters_;
};

using Maker = std::function<LearningRateSchedule(const Arguments& arguments, double initial)>;

struct Known {
  std::vector<std::string> parameters;
  Maker make;
};

const std::map<std::string, Known>& KnownSchedules() {
  static const std::map<std::string, Known> known = {
      {"Constant", {{"learning_rate"}, [](const Arguments& a, double initial) {
                      return Constant(a.number("learning_rate", initial));
                    }}},
      {"PiecewiseConstantDecay", {{"boundaries", "values"}, [](const Arguments& a, double) {
                                    std::vector<int64_t> boundaries;
                                    for (double boundary : a.list("boundaries")) {
                                      EST_CHECK(boundary == std::floor(boundary), ConfigError,
                                                "PiecewiseConstantDecay: boundary ", boundary,
                                                " is not a whole number of steps");
                                      boundaries.push_back(static_cast<int64_t>(boundary));
                                    }
                                    return PiecewiseConstantDecay(boundaries, a.list("values"));
                                  }}},
      {"ExponentialDecay",
       {{"initial_learning_rate", "decay_steps", "decay_rate", "staircase"}, [](const Arguments& a, double initial) {
          return ExponentialDecay(a.number("initial_learning_rate", initial), a.steps("decay_steps"),
                                  a.number("decay_rate", std::nullopt), a.flag("staircase"));
        }}},
      {"PolynomialDecay",
       {{"initial_learning_rate", "decay_steps", "end_learning_rate", "power", "cycle"},
        [](const Arguments& a, double initial) {
          return PolynomialDecay(a.number("initial_learning_rate", initial), a.steps("decay_steps"),
                                 a.number("end_learning_rate", 0.0001), a.number("power", 1.0), a.flag("cycle"));
        }}},
      {"InverseTimeDecay",
       {{"initial_learning_rate", "decay_steps", "decay_rate", "staircase"}, [](const Arguments& a, double initial) {
          return InverseTimeDecay(a.number("initial_learning_rate", initial), a.steps("decay_steps"),
                                  a.number("decay_rate", std::nullopt), a.flag("staircase"));
        }}},
      {"CosineDecay", {{"initial_learning_rate", "decay_steps", "alpha"}, [](const Arguments& a, double initial) {
                         return CosineDecay(a.number("initial_learning_rate", initial), a.steps("decay_steps"),
                                            a.number("alpha", 0.0));
                       }}},
      {"CosineDecayRestarts",
       {{"initial_learning_rate", "first_decay_steps", "t_mul", "m_mul", "alpha"},
        [](const Arguments& a, double initial) {
          return CosineDecayRestarts(a.number("initial_learning_rate", initial), a.steps("first_decay_steps"),
                                     a.number("t_mul", 2.0), a.number("m_mul", 1.0), a.number("alpha", 0.0));
        }}},
  };
  return known;
}

// The schedule `text` names, and its arguments by parameter name.
std::pair<const Known*, std::map<std::string, Value>> ReadSchedule(const std::string& text, std::string& name) {
  ScheduleParser parser(text);
  name = parser.name();
  const auto known = KnownSchedules().find(name);
  EST_CHECK(known != KnownSchedules().end(), ConfigError, "learning-rate schedule '", text, "': unknown schedule '",
            name, "'; expected one of ", LearningRateScheduleNames());
  return {&known->second, parser.arguments(name, known->second.parameters)};
}

}  // namespace

LearningRateSchedule ParseLearningRateSchedule(const std::string& text, double initial_learning_rate) {
  std::string name;
  auto [known, arguments] = ReadSchedule(text, name);
  return known->make(Arguments(name, std::move(arguments), known->parameters), initial_learning_rate);
}

bool ScheduleTakesInitialRate(const std::string& text) {
  std::string name;
  const auto [known, arguments] = ReadSchedule(text, name);
  const std::string& first = known->parameters.front();
  return (first == "initial_learning_rate" || first == "learning_rate") && arguments.count(first) == 0;
}

std::string LearningRateScheduleNames() {
  std::string names;
  for (const auto& [name, known] : KnownSchedules()) names += (names.empty() ? "" : ", ") + name;
  return names;
}

}  // namespace est::schedules
