// The two halves of `tokenlease bench` (bench.h): the hot path
// (bench_hot.cc) and direct mode (bench_direct.cc), and the statistics
// they share.
#ifndef TOKENLEASE_TOOLS_CLI_BENCH_PARTS_H_
#define TOKENLEASE_TOOLS_CLI_BENCH_PARTS_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "cli/bench.h"

namespace tokenlease::cli {

// The median of `v` (the mean of the middle two for an even count); 0 if
// empty.
double Median(std::vector<double> v);
// The value at quantile q in [0, 1] (nearest rank); 0 if empty.
double Quantile(std::vector<double> v, double q);

// The hot-path cases of HotCaseNames(). `url`: the Redis the leased case
// takes its lease from ("" : that case is skipped with a note), with
// options.tls.
// `cancelled` is checked between measurements.
std::vector<HotResult> MeasureHotPath(const BenchOptions& options,
                                      const std::string& url,
                                      std::ostream& progress,
                                      absl::FunctionRef<bool()> cancelled);

// Single-call latency and pipelined throughput of a DirectLimiter on
// `url`, with options.tls.
DirectResult MeasureDirect(const BenchOptions& options, const std::string& url,
                           std::ostream& progress,
                           absl::FunctionRef<bool()> cancelled);

}  // namespace tokenlease::cli

#endif  // TOKENLEASE_TOOLS_CLI_BENCH_PARTS_H_
