// An instance process of the demo: it builds its target (targets.h), waits
// for the parent's start time, runs --threads paced load threads and a
// monitor that reports each window as it closes, then sends its results to
// the parent (protocol.h) and exits.
#ifndef TOKENLEASE_TOOLS_DEMO_INSTANCE_H_
#define TOKENLEASE_TOOLS_DEMO_INSTANCE_H_

#include "demo/flags.h"

namespace tokenlease::tools {

// Runs instance `o.instance` (its socket to the parent: o.fd) and returns
// its exit status: 0 when it sent its results, 1 otherwise.
int RunInstance(const DemoOptions& o);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_INSTANCE_H_
