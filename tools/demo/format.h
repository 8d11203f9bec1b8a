// Number formatting and percentiles shared by the live rows and the
// summary. Pure functions (unit-tested).
#ifndef TOKENLEASE_TOOLS_DEMO_FORMAT_H_
#define TOKENLEASE_TOOLS_DEMO_FORMAT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tokenlease::tools {

// The value at quantile q in [0, 1] of `sorted` (the ceil(q * n)-th
// smallest; the smallest for q = 0); 0 if empty.
int64_t Percentile(const std::vector<int64_t>& sorted, double q);

// Rounded to a whole number: 1234.6 -> "1235".
std::string Fmt(double v);

// With thousands separators: 1234567 -> "1,234,567".
std::string Commas(int64_t v);

// A latency for a narrow column: "240ns", "1.49us", "23.9us", "1.24ms".
std::string ShortNs(int64_t ns);

// "x y z" of /proc/loadavg ("?" if unreadable).
std::string LoadAverage();

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_FORMAT_H_
