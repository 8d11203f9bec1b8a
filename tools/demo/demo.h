// `tokenlease demo`, the live multi-instance demo. The parent (demo.cc)
// parses the flags (flags.h, one table whose rows also give --help and the
// ranges), starts a private redis-server (support/redis_server.h; or with
// --redis=cluster a Redis Cluster, support/redis_cluster.h) unless --url,
// re-runs this binary as instance processes (instance.cc: load threads
// deciding through targets.h, the one file that calls the limiters), reads
// their lines (protocol.h: counts, samples, health transitions and the
// limiters' own Prometheus counters), drives the outage, prints the live
// rows (live.h), and at the end the summary (report.h: one table of the
// phases against their bounds, computed by one function), the CSV and the
// SVG chart (chart.cc); workload.h is the load both sides compute from the
// same options.
#ifndef TOKENLEASE_TOOLS_DEMO_DEMO_H_
#define TOKENLEASE_TOOLS_DEMO_DEMO_H_

namespace tokenlease::tools {

// Runs `tokenlease demo` with the whole command line (argv[1] is "demo").
// Returns the exit status: 0 when the run completed (even if a bound was
// exceeded) or was stopped by one Ctrl-C, 1 if it could not run or an
// instance failed, 2 on invalid flags or flag values, 130 on a second
// Ctrl-C.
int RunDemo(int argc, char** argv);

// An instance process (instance.cc): builds its target (targets.h), waits
// for the parent's start time, runs --threads paced load threads and a
// monitor that reports each window as it closes, then sends its results
// (protocol.h) over its socket (o.fd). Returns 0 when it sent them, else 1.
struct DemoOptions;
int RunInstance(const DemoOptions& o);

}  // namespace tokenlease::tools

#endif  // TOKENLEASE_TOOLS_DEMO_DEMO_H_
