// `tokenlease demo`: one in-process limit under multi-threaded load.
#ifndef TOKENLEASE_TOOLS_DEMO_H_
#define TOKENLEASE_TOOLS_DEMO_H_

#include <string>
#include <vector>

namespace tokenlease::tools {

// Runs the demo with `args` (the arguments after "demo"). Returns the exit
// status: 0 on success, 1 if the bound check fails or the run cannot start,
// 2 on a usage error or an invalid limit.
int RunDemo(const std::vector<std::string>& args);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_H_
