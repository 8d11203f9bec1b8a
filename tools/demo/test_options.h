// Options the demo's tests share: the issue-10 Zipf workload's shape.
#ifndef TOKENLEASE_TOOLS_DEMO_TEST_OPTIONS_H_
#define TOKENLEASE_TOOLS_DEMO_TEST_OPTIONS_H_

#include "demo/flags.h"

namespace tokenlease::tools {

// Zipf keys over 100,000, 2 instances x 1 thread, 100/s per key with a
// burst of 100, 4,700/s offered, no outage; every other field at its
// default.
inline DemoOptions ZipfTestOptions() {
  DemoOptions o;
  o.keys = KeyDist::kZipf;
  o.zipf_keys = 100000;
  o.instances = 2;
  o.threads = 1;
  o.limit = 100;
  o.burst = 100;
  o.offered = 4700;
  o.outage = false;
  return o;
}

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_TEST_OPTIONS_H_
