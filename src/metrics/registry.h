// Registry: the metric families a process exports, rendered for a
// Prometheus scrape (text exposition format 0.0.4).
//
//   Registry registry;
//   TSR_ASSIGN_OR_RETURN(CounterFamily* requests,
//       registry.AddCounter("tessera:num_requests_total", "Requests.",
//                           {"model_name"}));
//   Counter& served = requests->Labels("llama");  // keep this reference
//   served.Inc();                                  // hot path: one atomic add
//   std::string body = registry.RenderPrometheus();
//
// A family is a name, HELP text, type and label names; each distinct tuple
// of label values is one child cell (metrics/metric.h). A family without
// labels has exactly one child, created at registration, so it renders 0
// before its first update. A collector family (AddCollector) has no cells:
// its callback supplies the samples at every render.
//
// Output: families in registration order, each as "# HELP", "# TYPE", then
// its samples with children sorted by label values. Counter names must end
// in "_total" (Prometheus convention). Histograms render cumulative
// `name_bucket{...,le="b"}` lines ending with le="+Inf", then `name_sum` and
// `name_count`.
//
// Errors: registering a name twice is a programming error reported as
// ALREADY_EXISTS (not an assert), so a caller can surface it at start-up;
// invalid names, label names or buckets are INVALID_ARGUMENT. Passing the
// wrong number of label values to WithLabels/Labels is a caller bug: it
// asserts in debug builds; in release builds it logs an error and returns a
// detached cell that is never rendered.
//
// Thread-safety: everything is thread-safe. Registration and WithLabels take
// short mutexes; updates through a held cell reference are lock-free;
// RenderPrometheus may run on several threads at once, concurrently with
// updates and registration.
//
// Lifetime: families and cells stay valid (same address) for the lifetime of
// the Registry; nothing is ever removed.
#ifndef TESSERA_METRICS_REGISTRY_H_
#define TESSERA_METRICS_REGISTRY_H_

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "base/status.h"
#include "metrics/metric.h"
#include "metrics/text_format.h"

namespace tessera::metrics {

enum class MetricType { kCounter, kGauge, kHistogram };

// "counter", "gauge" or "histogram", as written on a # TYPE line.
std::string_view MetricTypeName(MetricType type);

// What every family has; Registry owns them.
class FamilyBase {
 public:
  virtual ~FamilyBase() = default;
  FamilyBase(const FamilyBase&) = delete;
  FamilyBase& operator=(const FamilyBase&) = delete;

  const std::string& name() const { return name_; }
  const std::string& help() const { return help_; }
  MetricType type() const { return type_; }
  const std::vector<std::string>& label_names() const { return label_names_; }

  // Appends this family's # HELP, # TYPE and sample lines to *out.
  virtual void Render(std::string* out) const = 0;

 protected:
  FamilyBase(std::string name, std::string help, MetricType type,
             std::vector<std::string> label_names);

 private:
  const std::string name_;
  const std::string help_;
  const MetricType type_;
  const std::vector<std::string> label_names_;
};

// A family of Counter, Gauge or Histogram cells, one per label-value tuple.
template <typename T>
class Family final : public FamilyBase {
 public:
  using MakeChild = std::function<std::unique_ptr<T>()>;

  // Built by Registry::Add*; label names are already validated.
  Family(std::string name, std::string help, MetricType type,
         std::vector<std::string> label_names, MakeChild make_child);

  // The cell for these label values (one per label name, in order), created
  // on first use. Takes the family's mutex: cache the reference on hot paths.
  T& WithLabels(const std::vector<std::string>& label_values);
  // Labels("a", name) == WithLabels({"a", name}).
  template <typename... V>
  T& Labels(const V&... values) {
    return WithLabels({std::string(values)...});
  }
  // The single cell of a family without labels.
  T& Get() { return WithLabels({}); }

  void Render(std::string* out) const override;

 private:
  const MakeChild make_child_;
  mutable Mutex mu_;
  std::map<std::vector<std::string>, std::unique_ptr<T>> children_
      TSR_GUARDED_BY(mu_);
  std::unique_ptr<T> detached_ TSR_GUARDED_BY(mu_);  // wrong-arity fallback
};

using CounterFamily = Family<Counter>;
using GaugeFamily = Family<Gauge>;
using HistogramFamily = Family<Histogram>;

// Where a collector callback writes the samples of the family it owns.
class CollectorSink {
 public:
  explicit CollectorSink(size_t num_labels) : num_labels_(num_labels) {}

  // Adds one sample. label_values pair with the family's label names in
  // order; a wrong count is a caller bug (asserts in debug builds, the sample
  // is dropped in release builds). Samples with equal label values are
  // summed (so per-device counts can be added up label by label).
  void Add(const std::vector<std::string>& label_values, double value);

  // Samples so far, sorted by label values.
  const std::map<std::vector<std::string>, double>& samples() const {
    return samples_;
  }

 private:
  size_t num_labels_;
  std::map<std::vector<std::string>, double> samples_;
};

using CollectFn = std::function<void(CollectorSink&)>;

class Registry {
 public:
  Registry() = default;
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // Each returns the new family, owned by the registry. Errors: see above.
  StatusOr<CounterFamily*> AddCounter(
      std::string name, std::string help,
      std::vector<std::string> label_names = {});
  StatusOr<GaugeFamily*> AddGauge(std::string name, std::string help,
                                  std::vector<std::string> label_names = {});
  // upper_bounds: finite and strictly increasing; a trailing +Inf may be
  // given and is dropped (the +Inf bucket is always there). Label "le" is
  // reserved.
  StatusOr<HistogramFamily*> AddHistogram(
      std::string name, std::string help, std::vector<double> upper_bounds,
      std::vector<std::string> label_names = {});

  // A counter or gauge family whose samples `collect` supplies at each
  // render, for values that live elsewhere or are computed on demand. The
  // callback may run on several HTTP threads at once, so it must be
  // thread-safe; it runs without any registry lock held.
  Status AddCollector(std::string name, std::string help, MetricType type,
                      std::vector<std::string> label_names, CollectFn collect);

  // The exposition text of every family; serve it with
  // kPrometheusContentType.
  std::string RenderPrometheus() const;

 private:
  Status CheckNewFamily(const std::string& name, MetricType type,
                        const std::vector<std::string>& label_names) const
      TSR_REQUIRES(mu_);
  template <typename F>
  F* Insert(std::unique_ptr<F> family) TSR_REQUIRES(mu_);

  mutable Mutex mu_;
  std::vector<std::unique_ptr<FamilyBase>> families_ TSR_GUARDED_BY(mu_);
  std::set<std::string> names_ TSR_GUARDED_BY(mu_);
};

}  // namespace tessera::metrics

#endif  // TESSERA_METRICS_REGISTRY_H_
