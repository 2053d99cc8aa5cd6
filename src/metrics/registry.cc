#include "metrics/registry.h"

#include <fmt/format.h>

#include <cassert>
#include <cmath>
#include <utility>

#include "base/logging.h"

namespace tessera::metrics {
namespace {

// `a="x",b="y"` for these names and values (values escaped); empty if none.
std::string LabelPairs(const std::vector<std::string>& names,
                       const std::vector<std::string>& values) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    fmt::format_to(std::back_inserter(out), "{}=\"{}\"", names[i],
                   EscapeLabelValue(values[i]));
  }
  return out;
}

// One sample line: `name{pairs} value` (no braces when pairs is empty).
void AppendSample(std::string* out, std::string_view name,
                  std::string_view pairs, double value) {
  if (pairs.empty()) {
    fmt::format_to(std::back_inserter(*out), "{} {}\n", name,
                   FormatValue(value));
  } else {
    fmt::format_to(std::back_inserter(*out), "{}{{{}}} {}\n", name, pairs,
                   FormatValue(value));
  }
}

void AppendHeader(std::string* out, const FamilyBase& family) {
  fmt::format_to(std::back_inserter(*out), "# HELP {} {}\n# TYPE {} {}\n",
                 family.name(), EscapeHelp(family.help()), family.name(),
                 MetricTypeName(family.type()));
}

void AppendCell(std::string* out, const std::string& name,
                const std::string& pairs, const Counter& cell) {
  AppendSample(out, name, pairs, cell.Value());
}

void AppendCell(std::string* out, const std::string& name,
                const std::string& pairs, const Gauge& cell) {
  AppendSample(out, name, pairs, cell.Value());
}

void AppendCell(std::string* out, const std::string& name,
                const std::string& pairs, const Histogram& cell) {
  const Histogram::Snapshot snapshot = cell.Read();
  const std::vector<double>& bounds = cell.upper_bounds();
  const std::string bucket = name + "_bucket";
  const std::string sep = pairs.empty() ? "" : ",";
  for (size_t i = 0; i <= bounds.size(); ++i) {
    const double le = i < bounds.size() ? bounds[i] : INFINITY;
    AppendSample(out, bucket,
                 fmt::format("{}{}le=\"{}\"", pairs, sep, FormatValue(le)),
                 static_cast<double>(snapshot.cumulative[i]));
  }
  AppendSample(out, name + "_sum", pairs, snapshot.sum);
  AppendSample(out, name + "_count", pairs,
               static_cast<double>(snapshot.count));
}

// A family whose samples a callback supplies at render time.
class CollectorFamily final : public FamilyBase {
 public:
  CollectorFamily(std::string name, std::string help, MetricType type,
                  std::vector<std::string> label_names, CollectFn collect)
      : FamilyBase(std::move(name), std::move(help), type,
                   std::move(label_names)),
        collect_(std::move(collect)) {}

  void Render(std::string* out) const override {
    CollectorSink sink(label_names().size());
    collect_(sink);
    AppendHeader(out, *this);
    for (const auto& [values, value] : sink.samples()) {
      AppendSample(out, name(), LabelPairs(label_names(), values), value);
    }
  }

 private:
  const CollectFn collect_;
};

}  // namespace

std::string_view MetricTypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

FamilyBase::FamilyBase(std::string name, std::string help, MetricType type,
                       std::vector<std::string> label_names)
    : name_(std::move(name)),
      help_(std::move(help)),
      type_(type),
      label_names_(std::move(label_names)) {}

template <typename T>
Family<T>::Family(std::string name, std::string help, MetricType type,
                  std::vector<std::string> label_names, MakeChild make_child)
    : FamilyBase(std::move(name), std::move(help), type,
                 std::move(label_names)),
      make_child_(std::move(make_child)) {}

template <typename T>
T& Family<T>::WithLabels(const std::vector<std::string>& label_values) {
  MutexLock lock(&mu_);
  if (label_values.size() != label_names().size()) {
    assert(false && "metric family given the wrong number of label values");
    TSR_LOG_ERROR(
        "metrics: family {} takes {} label values, got {}; the update is not "
        "exported (fix the caller)",
        name(), label_names().size(), label_values.size());
    if (detached_ == nullptr) detached_ = make_child_();
    return *detached_;
  }
  std::unique_ptr<T>& child = children_[label_values];
  if (child == nullptr) child = make_child_();
  return *child;
}

template <typename T>
void Family<T>::Render(std::string* out) const {
  AppendHeader(out, *this);
  MutexLock lock(&mu_);
  for (const auto& [values, child] : children_) {
    AppendCell(out, name(), LabelPairs(label_names(), values), *child);
  }
}

template class Family<Counter>;
template class Family<Gauge>;
template class Family<Histogram>;

void CollectorSink::Add(const std::vector<std::string>& label_values,
                        double value) {
  assert(label_values.size() == num_labels_ &&
         "collector sample with the wrong number of label values");
  if (label_values.size() != num_labels_) return;
  samples_[label_values] += value;
}

Status Registry::CheckNewFamily(
    const std::string& name, MetricType type,
    const std::vector<std::string>& label_names) const {
  if (!IsValidMetricName(name)) {
    return InvalidArgumentError(fmt::format(
        "metric name '{}' is not valid; use [a-zA-Z_:][a-zA-Z0-9_:]*", name));
  }
  if (type == MetricType::kCounter && !name.ends_with("_total")) {
    return InvalidArgumentError(fmt::format(
        "counter '{}' must be named '..._total' (Prometheus convention)",
        name));
  }
  if (names_.contains(name)) {
    return AlreadyExistsError(fmt::format(
        "metric '{}' is already registered; each family is registered once, "
        "share the returned handle instead",
        name));
  }
  std::set<std::string_view> seen;
  for (const std::string& label : label_names) {
    if (!IsValidLabelName(label)) {
      return InvalidArgumentError(
          fmt::format("metric '{}': label name '{}' is not valid; use "
                      "[a-zA-Z_][a-zA-Z0-9_]* not starting with '__'",
                      name, label));
    }
    if (type == MetricType::kHistogram && label == "le") {
      return InvalidArgumentError(fmt::format(
          "histogram '{}': label name 'le' is reserved for buckets", name));
    }
    if (!seen.insert(label).second) {
      return InvalidArgumentError(fmt::format(
          "metric '{}': label name '{}' appears twice", name, label));
    }
  }
  return OkStatus();
}

template <typename F>
F* Registry::Insert(std::unique_ptr<F> family) {
  F* raw = family.get();
  names_.insert(raw->name());
  families_.push_back(std::move(family));
  return raw;
}

StatusOr<CounterFamily*> Registry::AddCounter(
    std::string name, std::string help, std::vector<std::string> label_names) {
  MutexLock lock(&mu_);
  TSR_RETURN_IF_ERROR(CheckNewFamily(name, MetricType::kCounter, label_names));
  const bool unlabeled = label_names.empty();
  CounterFamily* family = Insert(std::make_unique<CounterFamily>(
      std::move(name), std::move(help), MetricType::kCounter,
      std::move(label_names), [] { return std::make_unique<Counter>(); }));
  if (unlabeled) family->Get();
  return family;
}

StatusOr<GaugeFamily*> Registry::AddGauge(
    std::string name, std::string help, std::vector<std::string> label_names) {
  MutexLock lock(&mu_);
  TSR_RETURN_IF_ERROR(CheckNewFamily(name, MetricType::kGauge, label_names));
  const bool unlabeled = label_names.empty();
  GaugeFamily* family = Insert(std::make_unique<GaugeFamily>(
      std::move(name), std::move(help), MetricType::kGauge,
      std::move(label_names), [] { return std::make_unique<Gauge>(); }));
  if (unlabeled) family->Get();
  return family;
}

StatusOr<HistogramFamily*> Registry::AddHistogram(
    std::string name, std::string help, std::vector<double> upper_bounds,
    std::vector<std::string> label_names) {
  MutexLock lock(&mu_);
  TSR_RETURN_IF_ERROR(
      CheckNewFamily(name, MetricType::kHistogram, label_names));
  if (!upper_bounds.empty() && upper_bounds.back() == INFINITY) {
    upper_bounds.pop_back();
  }
  for (size_t i = 0; i < upper_bounds.size(); ++i) {
    if (!std::isfinite(upper_bounds[i]) ||
        (i > 0 && !(upper_bounds[i - 1] < upper_bounds[i]))) {
      return InvalidArgumentError(fmt::format(
          "histogram '{}': bucket bounds must be finite and strictly "
          "increasing; bound #{} ({}) is not",
          name, i, FormatValue(upper_bounds[i])));
    }
  }
  auto bounds =
      std::make_shared<const std::vector<double>>(std::move(upper_bounds));
  const bool unlabeled = label_names.empty();
  HistogramFamily* family = Insert(std::make_unique<HistogramFamily>(
      std::move(name), std::move(help), MetricType::kHistogram,
      std::move(label_names),
      [bounds] { return std::make_unique<Histogram>(bounds); }));
  if (unlabeled) family->Get();
  return family;
}

Status Registry::AddCollector(std::string name, std::string help,
                              MetricType type,
                              std::vector<std::string> label_names,
                              CollectFn collect) {
  if (type == MetricType::kHistogram) {
    return InvalidArgumentError(fmt::format(
        "collector '{}': only counter and gauge collectors are supported",
        name));
  }
  if (!collect) {
    return InvalidArgumentError(
        fmt::format("collector '{}': the collect callback is empty", name));
  }
  MutexLock lock(&mu_);
  TSR_RETURN_IF_ERROR(CheckNewFamily(name, type, label_names));
  Insert(std::make_unique<CollectorFamily>(std::move(name), std::move(help),
                                           type, std::move(label_names),
                                           std::move(collect)));
  return OkStatus();
}

std::string Registry::RenderPrometheus() const {
  // Families are never removed, so the pointers stay valid after unlocking;
  // rendering (and collector callbacks) run without the registry lock.
  std::vector<const FamilyBase*> families;
  {
    MutexLock lock(&mu_);
    families.reserve(families_.size());
    for (const auto& family : families_) families.push_back(family.get());
  }
  std::string out;
  for (const FamilyBase* family : families) family->Render(&out);
  return out;
}

}  // namespace tessera::metrics
