// `tokenlease demo`, the live multi-instance demo: parses the flags, and
// either runs as an instance process (instance.h) or as the parent, which
// starts a private redis-server if needed (redis_server.h), spawns the
// instances (spawn.h), polls their pipes (protocol.h), prints the live rows
// (live.h) and the summary (report.h), and handles Ctrl-C.
#ifndef TOKENLEASE_TOOLS_DEMO_DEMO_H_
#define TOKENLEASE_TOOLS_DEMO_DEMO_H_

namespace tokenlease::tools {

// Runs `tokenlease demo` with the whole command line (argv[1] is "demo").
// Returns the exit status: 0 when the run completed (even if a bound was
// exceeded) or was stopped by one Ctrl-C, 1 if it could not run or an
// instance failed, 2 on invalid flag values, 130 on a second Ctrl-C.
int RunDemo(int argc, char** argv);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_DEMO_H_
