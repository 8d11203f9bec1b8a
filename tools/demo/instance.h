// An instance process of the demo: it builds its target (targets.h), waits
// for the parent's start time, runs --threads paced load threads and a
// monitor that samples each window (and with --live sends it as it closes),
// then sends its results over the data pipe (protocol.h) and exits.
#ifndef TOKENLEASE_TOOLS_DEMO_INSTANCE_H_
#define TOKENLEASE_TOOLS_DEMO_INSTANCE_H_

#include "demo/flags.h"
#include "demo/spawn.h"

namespace tokenlease::tools {

// Runs instance `role.index` and returns its exit status (0 when it sent
// its results, 1 otherwise).
int RunInstance(const DemoOptions& o, const InstanceRole& role);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_INSTANCE_H_
