// est-launch: starts the tasks of a TF_CONFIG cluster on this host (or this host's part of a job across
// hosts), one process per task, and supervises them.

#include <fcntl.h>

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>

#include "apps/common/number_checks.h"
#include "apps/common/parse_flags.h"
#include "apps/common/tls_flags.h"
#include "apps/est_launch/host_tasks.h"
#include "apps/est_launch/cpu_binding.h"
#include "apps/est_launch/node_agent.h"
#include "apps/est_launch/node_plan.h"
#include "apps/est_launch/port_finder.h"
#include "apps/est_launch/supervisor.h"
#include "common/error.h"

namespace {

constexpr const char* kFooter = R"(
Every task runs <command...> (PATH is searched) with the environment of est-launch plus
  TF_CONFIG   {"cluster": {"chief": ["H:P"], "worker": ["H:P+1", ...], "ps": [...], "evaluator": [...]},
               "task": {"type": "worker", "index": 1}}   (consecutive ports; jobs as chosen)
  EST_JOB_ID  a random id shared by all tasks of this launch
  EST_JOB_TOKEN  a random secret shared by all tasks of this launch, which the chief's
              store and the ps tasks ask of every call (est-launch's own EST_JOB_TOKEN when
              it has one)
  EST_TLS_CA_FILE, EST_TLS_CERT_FILE, EST_TLS_KEY_FILE, EST_TLS_REQUIRE_CLIENT_CERT
              from the --tls-* flags, when any is given
  EST_TASK    the task, as "chief-0", "worker-1" (crash-point tests use it)
  EST_MIN_WORKERS, EST_MAX_WORKERS  --min-workers, --max-workers, when given
  EST_RESTART_COUNT  how many times --max-restarts restarted the group (with --ps: this
              task) before this start
in a process group of its own, with stdin from /dev/null. Each line a task writes goes to
est-launch's stdout or stderr, prefixed with "[chief 0] ", "[worker 1] ", "[evaluator 0] ".
Without --port, P is a port the kernel picks for a bind to port 0, such that P..P+tasks-1
are all free when checked.

With --cpu-bind auto (the default), the training tasks (chief and workers) get disjoint
blocks of the CPUs est-launch may run on, as mpirun --bind-to core does: with C CPUs and
T training tasks, task k gets the C/T CPUs (rounded down) from position k*(C/T) of the
ascending list, and OMP_NUM_THREADS=C/T unless est-launch's environment sets it. The
evaluator stays on all CPUs. With fewer CPUs than training tasks, or --cpu-bind none, no
task is bound.

When a task exits with a non-zero status or is killed by a signal, every task's process
group gets SIGTERM; when est-launch gets SIGINT, SIGTERM or SIGHUP, it gets that signal.
With --ps, the ps tasks get it only once every other task has exited, so that the chief's
last pushes and checkpoint still reach them. SIGKILL follows after --grace-secs; a second
signal sends it at once. est-launch ends when every task's process group is empty:
processes a task leaves running are stopped the same way once all tasks have exited.

With --max-restarts N, a failed task (non-zero status or killed by a signal) makes
est-launch stop every task as above and then start them all again, up to N times, after
waiting --restart-backoff-secs before the first restart and twice as long before each
next one (at most --max-restart-backoff-secs); tasks resume from the latest checkpoint in
their model_dir. With --ps (parameter servers), the failed task alone is started again,
each such restart counting one of the N: the other workers train on, a restarted worker
continues its own input, and a restarted ps task is restored by the chief.

With --min-workers N (all-reduce training), a failed worker other than the chief does not
stop the others while at least N training tasks (chief and workers) are left: they re-form
their group without it and train on from the step it failed in (MultiWorkerMirroredStrategy
reads EST_MIN_WORKERS). With --max-restarts as well, the failed worker alone is started
again after the back-off (each such restart counting one of the N) and joins the running
group at the end of a step, taking the chief's state; while fewer than N are left, the
others wait for it (up to their timeout). A failed chief, or fewer than N left without a
restart, stops every task as above. Across hosts, give it to node 0: node 0 counts the
training tasks of every host, and each host restarts its own failed workers alone. With
--max-workers M as well, the group grows to up to M training tasks: a worker started
later, by hand or by a scheduler, with this job's EST_JOB_ID, EST_JOB_TOKEN and a TF_CONFIG
whose task index is beyond the cluster's, joins it at the end of a step.

Across hosts, run one est-launch per host with --nnodes N, its own --node-rank and the same
--rendezvous HOST:PORT; node 0 listens there. Each host's --chief, --workers, --ps and
--evaluator are its own tasks; once all N have joined (within --rendezvous-timeout-secs),
every task gets the whole job's TF_CONFIG (each job's tasks numbered in node-rank order),
EST_JOB_ID and EST_JOB_TOKEN (node 0's; with EST_JOB_TOKEN set, a node joins only with the
same one). A failed task (but a worker lost under node 0's --min-workers), a signal, or a
host's est-launch gone stops the tasks on every host; node 0's --max-restarts restarts the
whole job once every host has joined again. Under node 0's --min-workers, the est-launch of
a host without the chief that is gone loses that host's workers: node 0 counts them lost,
and the other hosts train on while N training tasks are left.

With --nnodes MIN:MAX, the job starts once nodes 0 to MIN - 1 have joined; nodes MIN to
MAX - 1 join when they come. Under node 0's --min-workers, a node may join the running job,
bringing workers only: one of ranks MIN and up, or one in place of a node whose est-launch is
gone. Its workers take the lowest free worker indices and join the training group at the
end of a step, while the group holds fewer than node 0's --max-workers (else the
cluster's training tasks).

Every task gets SIGHUP when est-launch exits or is killed (SIGKILL included); est-train
stops on it as on SIGTERM (a checkpoint first) and exits with 129: no task trains on alone.
Across hosts under node 0's --min-workers, a worker on another node than node 0 gets SIGKILL
instead: the group trains on without it.

SIGUSR1 to est-launch is forwarded to each running task that catches it: a TorchEstimator
program that trains logs its collectives' last calls and the one it is inside (its flight
recorders). Nothing stops; a task that does not catch SIGUSR1 is not sent it. Across hosts,
SIGUSR1 to any host's est-launch reaches the tasks of every host.

Exit status: 0 when every task exited with status 0; 1 when a task failed, or did not stop
cleanly on a forwarded signal (an exit status other than 0 or 128+N, or SIGKILL); 2 for bad
flags; 126/127 when the command cannot be executed / is not found; 128+N after signal N.)";

struct Flags {
  int workers = 0;
  bool chief = false;
  int ps = 0;
  bool evaluator = false;
  int port = 0;
  std::string host;
  int min_nodes = 1;  // --nnodes N, or MIN:MAX
  int max_nodes = 1;
  int node_rank = 0;
  std::string rendezvous;
  double rendezvous_timeout_secs = 600;
  double grace_secs = 10;
  std::string cpu_bind = "auto";
  int max_restarts = 0;
  int min_workers = 0;
  int max_workers = 0;
  double restart_backoff_secs = 1;
  double max_restart_backoff_secs = 60;
  est_apps::TlsFlags tls;
  std::vector<std::string> command;
};

// --nnodes: "N" (N hosts) or "MIN:MAX", with 1 <= MIN <= MAX <= 4096; nothing for another text.
std::optional<std::pair<int, int>> ParseNodeCount(const std::string& text) {
  const auto number = [](const std::string& part) -> std::optional<int> {
    if (part.empty() || part.size() > 4 || part.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    const int value = std::stoi(part);
    if (value < 1 || value > 4096) return std::nullopt;
    return value;
  };
  const size_t colon = text.find(':');
  const std::optional<int> min = number(text.substr(0, colon));
  const std::optional<int> max = colon == std::string::npos ? min : number(text.substr(colon + 1));
  if (!min || !max || *min > *max) return std::nullopt;
  return std::make_pair(*min, *max);
}

void AddFlags(CLI::App& app, Flags& flags) {
  app.add_option("--workers", flags.workers, "Number of tasks in job \"worker\" (0 only with --chief)")
      ->required()
      ->check(est_apps::IntegerIn<int>(0, 4096));
  app.add_flag("--chief", flags.chief, "Add job \"chief\" with one task, on the first port");
  app.add_option("--ps", flags.ps,
                 "Number of tasks in job \"ps\" (parameter servers; train with --strategy parameter_server)")
      ->check(est_apps::IntegerIn<int>(0, 1024))
      ->capture_default_str();
  app.add_flag("--evaluator", flags.evaluator, "Add job \"evaluator\" with one task, on the last port");
  app.add_option("--port", flags.port, "First port of the cluster (default: a free range found by binding port 0)")
      ->check(est_apps::IntegerIn<int>(0, 65535));
  app.add_option("--host", flags.host,
                 "Host name or address of this machine that every task listens on (default: 127.0.0.1; with "
                 "--nnodes, the rendezvous host on node 0 and on the others the address they reach it from)");
  app.add_option_function<std::string>(
         "--nnodes",
         [&flags](const std::string& text) { std::tie(flags.min_nodes, flags.max_nodes) = *ParseNodeCount(text); },
         "Number of hosts, each running one est-launch with its own --node-rank, or MIN:MAX: nodes MIN and up may "
         "join later (see below)")
      ->check(CLI::Validator(
          [](std::string& text) {
            return ParseNodeCount(text)
                       ? std::string()
                       : "expected N or MIN:MAX, whole numbers with 1 <= MIN <= MAX <= 4096, got '" + text + "'";
          },
          "N|MIN:MAX"))
      ->default_str("1");
  app.add_option("--node-rank", flags.node_rank,
                 "This host's rank, 0 to --nnodes - 1 (MAX - 1); node 0 hosts --rendezvous")
      ->check(est_apps::IntegerIn<int>(0, 4095))
      ->capture_default_str();
  app.add_option("--rendezvous", flags.rendezvous,
                 "HOST:PORT where node 0's est-launch listens and the other hosts' connect (with --nnodes 2 or more)");
  app.add_option("--rendezvous-timeout-secs", flags.rendezvous_timeout_secs,
                 "Seconds a rendezvous (the first, and the one after each restart) may take")
      ->check(est_apps::NumberIn(1, 86400, "a number of seconds"))
      ->capture_default_str();
  app.add_option("--grace-secs", flags.grace_secs, "Seconds from SIGTERM to SIGKILL when tasks are stopped")
      ->check(est_apps::NumberIn(0, 86400, "a number of seconds"))
      ->capture_default_str();
  app.add_option("--cpu-bind", flags.cpu_bind, "auto: bind chief and workers to disjoint CPU sets; none: do not bind")
      ->check(CLI::IsMember({"auto", "none"}))
      ->capture_default_str();
  app.add_option("--max-restarts", flags.max_restarts,
                 "After a task fails, stop every task and start them all again, at most this many times")
      ->check(est_apps::IntegerIn<int>(0, 1000000))
      ->capture_default_str();
  app.add_option("--min-workers", flags.min_workers,
                 "In-job recovery: when a worker (not the chief) fails, the others train on without it while at "
                 "least this many training tasks (chief and workers) are left, and with --max-restarts it is "
                 "started again alone to join them; 0: a failed task stops every task")
      ->check(est_apps::IntegerIn<int>(0, 1000000))
      ->capture_default_str();
  app.add_option("--max-workers", flags.max_workers,
                 "With --min-workers: the most training tasks the group may grow to, taking workers started later "
                 "with task indexes beyond the cluster's (by hand or by a scheduler); 0: the cluster's training tasks")
      ->check(est_apps::IntegerIn<int>(0, 65536))
      ->capture_default_str();
  app.add_option("--restart-backoff-secs", flags.restart_backoff_secs,
                 "Seconds to wait before the first restart; each later restart waits twice as long")
      ->check(est_apps::NumberIn(0, 86400, "a number of seconds"))
      ->capture_default_str();
  app.add_option("--max-restart-backoff-secs", flags.max_restart_backoff_secs, "The longest wait before a restart")
      ->check(est_apps::NumberIn(0, 86400, "a number of seconds"))
      ->capture_default_str();
  est_apps::AddTlsFlags(app, flags.tls);
  app.add_option("command", flags.command, "The program to run for every task and its arguments (after -- when they start with -)")
      ->required();
  app.positionals_at_end();
  app.footer(kFooter);
}

// `words` random 32-bit words from the system's entropy source, in hex.
std::string RandomHex(int words) {
  std::random_device random;
  std::string text;
  char word[9];
  for (int i = 0; i < words; ++i) {
    std::snprintf(word, sizeof(word), "%08x", static_cast<unsigned>(random()));
    text += word;
  }
  return text;
}

// The tasks' EST_JOB_TOKEN: est-launch's own, else 128 random bits.
std::string JobToken() {
  const char* own = std::getenv("EST_JOB_TOKEN");
  return own != nullptr && *own != '\0' ? own : RandomHex(4);
}

// Checks the flags that CLI11 cannot; throws est::ConfigError naming the flag.
est_launch::ClusterLayout ValidatedLayout(const Flags& flags, bool port_given) {
  const bool across_hosts = flags.max_nodes > 1;
  const std::string nnodes = est_launch::DescribeNodeCount(flags.min_nodes, flags.max_nodes);
  est_launch::ClusterLayout layout;
  layout.workers = flags.workers;
  layout.chief = flags.chief;
  layout.ps = flags.ps;
  layout.evaluator = flags.evaluator;
  layout.host = flags.host.empty() && !across_hosts ? "127.0.0.1" : flags.host;
  if (across_hosts) {
    EST_CHECK(!flags.rendezvous.empty(), est::ConfigError, "--nnodes ", nnodes,
              " needs --rendezvous HOST:PORT, where node 0's est-launch listens");
    EST_CHECK(flags.node_rank < flags.max_nodes, est::ConfigError, "--node-rank ", flags.node_rank, " is not in 0..",
              flags.max_nodes - 1, " (--nnodes ", nnodes, ")");
    est_launch::SplitHostPort(flags.rendezvous, "--rendezvous");
  } else {
    EST_CHECK(flags.rendezvous.empty() && flags.node_rank == 0, est::ConfigError,
              "--rendezvous and --node-rank are for a launch across hosts: give --nnodes 2 or more");
  }
  // A host of a launch across hosts may run only ps tasks or the evaluator.
  est_launch::ValidateLayout(layout, across_hosts);
  if (flags.min_workers > 0) {
    EST_CHECK(flags.node_rank == 0, est::ConfigError,
              "--min-workers is node 0's: across hosts, node 0's --min-workers and --max-restarts are the job's "
              "recovery policy");
    EST_CHECK(flags.ps == 0, est::ConfigError,
              "--min-workers is for all-reduce training; with --ps, --max-restarts restarts a failed task alone");
    // Across hosts, node 0 checks it against the whole job's tasks once every node has joined.
    const int training = layout.workers + (layout.chief ? 1 : 0);
    EST_CHECK(across_hosts || flags.min_workers <= training, est::ConfigError, "--min-workers ", flags.min_workers,
              " exceeds the ", training, " training tasks (chief and workers)");
  }
  if (flags.max_workers > 0) {
    EST_CHECK(flags.node_rank == 0, est::ConfigError,
              "--max-workers is node 0's: across hosts, node 0's --min-workers and --max-workers are the job's");
    EST_CHECK(flags.min_workers > 0, est::ConfigError,
              "--max-workers needs --min-workers: a group grows only with in-job recovery");
    const int training = layout.workers + (layout.chief ? 1 : 0);
    EST_CHECK(across_hosts || flags.max_workers >= training, est::ConfigError, "--max-workers ", flags.max_workers,
              " is fewer than the ", training, " training tasks (chief and workers)");
  }
  if (port_given) est_launch::ValidatePortRange(flags.port, layout.num_tasks());
  if (!layout.host.empty()) est_launch::CheckLocalHost(layout.host);
  return layout;
}

int Run(const Flags& flags, const est_launch::ClusterLayout& layout, bool port_given) {
  est_launch::LaunchOptions options;
  options.command = flags.command;
  options.grace_secs = flags.grace_secs;
  options.job_id = RandomHex(2);
  options.job_token = JobToken();
  if (flags.tls.any()) options.environment = flags.tls.environment();
  options.max_restarts = flags.max_restarts;
  options.min_workers = flags.min_workers;
  options.max_workers = flags.max_workers;
  options.restart_backoff_secs = flags.restart_backoff_secs;
  options.max_restart_backoff_secs = flags.max_restart_backoff_secs;
  using est_launch::CpuBindMode;
  const CpuBindMode mode = flags.cpu_bind == "none" ? CpuBindMode::kNone : CpuBindMode::kAuto;
  if (flags.max_nodes > 1) {
    est_launch::NodeOptions node;
    node.min_nodes = flags.min_nodes;
    node.max_nodes = flags.max_nodes;
    node.node_rank = flags.node_rank;
    std::tie(node.rendezvous_host, node.rendezvous_port) = est_launch::SplitHostPort(flags.rendezvous, "--rendezvous");
    node.rendezvous_timeout_secs = flags.rendezvous_timeout_secs;
    node.layout = layout;
    node.port = port_given ? flags.port : 0;
    node.cpu_bind = mode;
    const char* own_token = std::getenv("EST_JOB_TOKEN");
    node.token_from_environment = own_token != nullptr && *own_token != '\0';
    return est_launch::RunNode(node, options);
  }
  const int first_port = port_given ? flags.port : est_launch::FindFreePortRange(layout.host, layout.num_tasks());
  const est_launch::HostTasks cluster(layout, first_port);
  const std::string ports = cluster.tasks().size() == 1
                                ? "port " + std::to_string(cluster.first_port())
                                : "ports " + std::to_string(cluster.first_port()) + "-" + std::to_string(cluster.last_port());
  std::fprintf(stderr, "est-launch: starting %zu task(s) on %s %s, EST_JOB_ID=%s\n", cluster.tasks().size(),
               cluster.host().c_str(), ports.c_str(), options.job_id.c_str());
  std::string binding;
  options.task_cpus = est_launch::BindTasksToCpus(cluster.tasks(), mode, &binding);
  if (!binding.empty()) std::fprintf(stderr, "est-launch: %s\n", binding.c_str());
  std::fflush(stderr);
  return est_launch::RunCluster(cluster, options).exit_code;
}

// Opens /dev/null on any of fds 0, 1 and 2 that is closed, so that no pipe created later
// lands on one of them.
void OpenStandardFds() {
  for (int fd = 0; fd <= 2; ++fd)
    if (::fcntl(fd, F_GETFD) == -1) ::open("/dev/null", O_RDWR);  // the lowest free fd: this one
}

}  // namespace

int main(int argc, char** argv) {
  OpenStandardFds();
  CLI::App app("est-launch: run a command as every task of a TF_CONFIG cluster, on this host or across hosts",
               "est-launch");
  Flags flags;
  AddFlags(app, flags);
  if (auto exit_status = est_apps::ParseFlags(app, argc, argv, "est-launch")) return *exit_status;
  const bool port_given = app.count("--port") > 0;
  est_launch::ClusterLayout layout;
  try {
    layout = ValidatedLayout(flags, port_given);
  } catch (const est::ConfigError& e) {
    std::fprintf(stderr, "est-launch: error: %s (see --help)\n", e.what());
    return 2;
  }
  try {
    return Run(flags, layout, port_given);
  } catch (const est::ConfigError& e) {
    std::fprintf(stderr, "est-launch: error: %s\n", e.what());
    return 2;
  } catch (const est::Error& e) {
    std::fprintf(stderr, "est-launch: error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "est-launch: internal error: %s\n", e.what());
    return 70;
  }
}
