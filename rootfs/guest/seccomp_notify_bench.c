// SPDX-License-Identifier: GPL-2.0
/*
 * seccomp_notify_bench - seccomp user-notification round-trip benchmark.
 *
 * Measures the same thing as `perf bench sched seccomp-notify` from the
 * seccomp sync-wakeup series (SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP): a target
 * process whose filter returns SECCOMP_RET_USER_NOTIF for gettid(2) calls it
 * in a loop, and a supervisor answers every notification with
 * SECCOMP_IOCTL_NOTIF_RECV + SECCOMP_IOCTL_NOTIF_SEND.  One round trip is
 * SEND (wake the target) -> target returns, calls gettid again -> RECV (the
 * supervisor wakes with the next notification).  The result is wall-clock
 * time (CLOCK_MONOTONIC) per round trip.
 *
 * Configurations are mode x placement:
 *   mode      default   plain listener
 *             sync      SECCOMP_IOCTL_NOTIF_SET_FLAGS(SYNC_WAKE_UP) first
 *   placement unpinned  no affinity
 *             same-cpu  target and supervisor on the first allowed CPU
 *             cross-cpu supervisor on the first, target on the second
 *                       allowed CPU
 *
 * The pinned configurations keep one long-lived target process each; this
 * process is the supervisor for all of them.  An unpinned configuration
 * gets a fresh target for every sample (and for every warm-up sample), so
 * the scheduler draws the two tasks' placement once per sample, not once
 * per run: one long-lived pair would make the whole run (the whole boot)
 * either same-CPU or cross-CPU, two speeds far apart.  Samples are taken
 * round-robin (sample k of every configuration before sample k+1 of any)
 * so slow drift, e.g. in an emulator, spreads evenly over the
 * configurations.
 *
 * Placement of an unpinned sample: its timed loop runs in PROBE_CHUNKS
 * chunks with the clock stopped in between; before the first chunk, between
 * chunks and after the last, with the target parked inside gettid, the
 * supervisor reads its own CPU (sched_getcpu) and the target's
 * (/proc/<pid>/stat, field 39: the CPU it last ran on).  The sample is
 * same-CPU if every probe saw both on one CPU, cross-CPU if none did, and
 * mixed otherwise.  What happens between two probes is not seen: a task
 * that moves away and back within a chunk goes unnoticed.
 *
 * Stopping: after the warm-up rounds, rounds continue until one of
 *   - --samples rounds were measured (the maximum);
 *   - --target-ci PCT is set, every configuration has at least
 *     --min-samples samples, and the distribution-free 95% confidence
 *     interval of every configuration's median is within +-PCT% of it
 *     (half its width over the median; the same rule the harness reports);
 *   - --budget-s S seconds have passed since the first round started
 *     (with --calib-max, and a configuration short of --min-samples kept
 *     samples then: up to 2 S).
 * Many short samples under a time budget beat a few long ones for the
 * median: a burst of host noise spoils a few samples, not the estimate.
 *
 * Speed checks (--calib-max R): under an emulator a guest CPU runs as fast
 * as the host thread behind it, and on a shared host that speed comes and
 * goes: on the cloud VMs the harness was measured on, a host CPU runs about
 * half as fast for stretches of a second or more while nothing else runs
 * on the VM (a plain loop on the host shows the same stretches).  A round trip timed in
 * such a stretch says nothing about the kernel.  With R set, one helper
 * process pinned to each CPU a sample may use (same-cpu: the first; the
 * others: both) spins a fixed amount of plain arithmetic right before and
 * right after every sample.  The sample is set aside if on one of its CPUs
 * both checks took more than R times that CPU's usual check time in this
 * run, the first quartile of its checks so far (the fastest of the first
 * few until there are CHECK_REF_MIN): it is printed as a `# disturbed` line
 * (kept in the log, not a METRIC) and counts neither for the medians nor
 * for the stopping rule.  Both checks, not either: a stretch outlasts a
 * sample, a hiccup does not (run_sample).  The usual check, not the
 * fastest: that is one lucky moment out of hundreds.  Against the fastest
 * and on either check, 40-85% of the samples were set aside, and those
 * were no slower than the ones kept (docs/measurements.md, "Samples the
 * speed checks set aside").
 *
 * Output on stdout, line buffered, one line per event and nothing else:
 *   METRIC seccomp_notify.<mode>.<placement> <us per op, 3 decimals> us/op
 *       one line per measured sample, in the order measured
 *   SKIP seccomp_notify.<mode>.<placement> <reason>
 *       once per configuration that cannot run, before any METRIC
 *   METRIC seccomp_notify.placement.<mode>.unpinned.<class>_share <pct> %
 *       after the last sample, for each unpinned configuration and each
 *       class (same_cpu, cross_cpu, mixed): its share of the samples, in
 *       percent with 1 decimal; not a latency (matrix.toml declares the
 *       prefix seccomp_notify.placement. as not compared)
 *   # disturbed seccomp_notify.<mode>.<placement> <us> us/op slow=<ratio>
 *       a sample set aside by the speed checks (--calib-max); ratio: the
 *       faster of its two checks on its slowest CPU, over that CPU's usual
 *   METRIC seccomp_notify.host.disturbed_share <pct> %
 *   METRIC seccomp_notify.host.check_speed <iterations per us> iter/us
 *   METRIC seccomp_notify.host.wake_gap <us> us   (default cross - same CPU)
 *   METRIC seccomp_notify.host.wake_gap_pct <pct> %   (the same, in percent
 *       of the same-CPU median: what matrix.toml splits sync vs default by)
 *       with --calib-max, after the last sample: the share of this run's
 *       samples set aside, and the speed of the fastest check (how fast
 *       the host ran this guest at its best); not the kernel's figures
 *       (matrix.toml declares seccomp_notify.host. as not compared)
 *   ERROR <text>
 *       unexpected failure; the program then exits 1
 * Everything else (header, warm-up values, summary) goes to stderr.
 * Exit status: 0 success (also when configurations were skipped),
 * 1 ERROR, 2 bad command line.
 *
 * Build: gcc -static -O2 -Wall -Wextra -o seccomp_notify_bench seccomp_notify_bench.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

/*
 * Added by the sync-wakeup series; the build host's uapi headers (6.1)
 * predate it.  Values from the series' include/uapi/linux/seccomp.h.
 */
#ifndef SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP
#define SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP (1UL << 0)
#endif
#ifndef SECCOMP_IOCTL_NOTIF_SET_FLAGS
#define SECCOMP_IOCTL_NOTIF_SET_FLAGS SECCOMP_IOW(4, __u64)
#endif

/* gettid can never legitimately return this, so the target can tell a
 * supervisor reply from the real syscall (same choice as the perf code). */
#define NOTIF_MAGIC INT_MAX

/* Target exit codes, decoded in describe_dead_targets(). */
#define TARGET_EXIT_SETUP 1   /* setup failed (reported over the socket) */
#define TARGET_EXIT_ERRNO 3   /* gettid failed, e.g. ENOSYS: listener gone */
#define TARGET_EXIT_VALUE 4   /* gettid not intercepted */

#define DEFAULT_LOOPS 2000
#define DEFAULT_SAMPLES 5
#define DEFAULT_WARMUP 1
#define DEFAULT_MIN_SAMPLES 10

enum { MODE_DEFAULT, MODE_SYNC, NMODES };
enum { PL_UNPINNED, PL_SAME_CPU, PL_CROSS_CPU, NPLACEMENTS };
static const char *const mode_names[NMODES] = { "default", "sync" };
static const char *const placement_names[NPLACEMENTS] = {
	"unpinned", "same-cpu", "cross-cpu"
};

/* Where the two tasks of an unpinned sample ran, as far as the probes see. */
enum { WHERE_SAME, WHERE_CROSS, WHERE_MIXED, NWHERE };
static const char *const where_names[NWHERE] = {
	"same_cpu", "cross_cpu", "mixed"
};

/* Timed chunks per unpinned sample; PROBE_CHUNKS + 1 placement probes. */
#define PROBE_CHUNKS 4

struct pair {
	pid_t pid;		/* target process, -1 if none */
	int listener;		/* notification fd, -1 if none */
	uint64_t pending_id;	/* received but not yet answered notification */
	int stat_fd;		/* /proc/<pid>/stat of the target, -1 if none */
};

struct config {
	char name[64];		/* seccomp_notify.<mode>.<placement> */
	int mode;
	int placement;
	bool skip;
	char skip_reason[128];
	cpu_set_t sup_cpus;	/* supervisor (this process) affinity */
	cpu_set_t tgt_cpus;	/* target affinity */
	struct pair pair;
	bool fresh;		/* a new target per sample (unpinned) */
	unsigned long where[NWHERE];	/* measured samples by placement */
	double *samples;
	unsigned long nsamples;
	unsigned int check_mask;	/* speed checks bracketing its samples */
	unsigned long disturbed;	/* samples set aside by them */
};

static struct config configs[NMODES * NPLACEMENTS];
static unsigned int nconfigs;
static struct pair probe_pair = { -1, -1, 0, -1 };
static int devnull_fd = -1;

static volatile sig_atomic_t child_died;
static volatile sig_atomic_t active_listener = -1;

static const char *prog_name = "seccomp_notify_bench";

/* ------------------------------------------------------------------ */
/* teardown and error reporting                                        */

static void pair_stop(struct pair *p)
{
	if (p->pid > 0) {
		kill(p->pid, SIGKILL);
		while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
			;
		p->pid = -1;
	}
	if (p->listener >= 0) {
		close(p->listener);
		p->listener = -1;
	}
	if (p->stat_fd >= 0) {
		close(p->stat_fd);
		p->stat_fd = -1;
	}
}

static void teardown_all(void)
{
	unsigned int i;

	/* Our own SIGKILLs must not look like unexpected deaths. */
	signal(SIGCHLD, SIG_DFL);
	active_listener = -1;
	pair_stop(&probe_pair);
	for (i = 0; i < nconfigs; i++)
		pair_stop(&configs[i].pair);
}

static void die(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	printf("ERROR %s\n", msg);
	fflush(stdout);
	teardown_all();
	exit(1);
}

/* Reap whichever targets have died and say how, for the ERROR line. */
static void describe_dead_targets(char *buf, size_t len)
{
	size_t off = 0;
	unsigned int i;

	buf[0] = '\0';
	for (i = 0; i < nconfigs && off < len; i++) {
		struct pair *p = &configs[i].pair;
		char how[96];
		int st;

		if (p->pid <= 0 || waitpid(p->pid, &st, WNOHANG) != p->pid)
			continue;
		if (WIFSIGNALED(st))
			snprintf(how, sizeof(how), "killed by signal %d (%s)",
				 WTERMSIG(st), strsignal(WTERMSIG(st)));
		else if (WEXITSTATUS(st) == TARGET_EXIT_ERRNO)
			snprintf(how, sizeof(how),
				 "exited: gettid failed (listener gone?)");
		else if (WEXITSTATUS(st) == TARGET_EXIT_VALUE)
			snprintf(how, sizeof(how),
				 "exited: gettid was not intercepted");
		else
			snprintf(how, sizeof(how), "exited with status %d",
				 WEXITSTATUS(st));
		off += snprintf(buf + off, len - off, "%starget of %s (pid %d) %s",
				off ? "; " : "", configs[i].name, (int)p->pid, how);
		p->pid = -1;
	}
	if (!buf[0])
		snprintf(buf, len, "a child process died");
}

static void notif_fail(const struct config *c, const char *what)
	__attribute__((noreturn));
static void notif_fail(const struct config *c, const char *what)
{
	int err = errno;
	char dead[512];

	if (child_died) {
		describe_dead_targets(dead, sizeof(dead));
		die("%s: %s failed: %s", c->name, what, dead);
	}
	die("%s: %s: %s", c->name, what, strerror(err));
}

/*
 * NOTIF_RECV only returns when a notification arrives or a signal is
 * pending: it does not notice that the target died (the filter being
 * orphaned only wakes poll()).  So a dead target would hang the supervisor.
 * SIGCHLD (no SA_RESTART) interrupts a blocked RECV with EINTR; if it lands
 * just before the ioctl is entered, replacing the listener fd with /dev/null
 * makes that ioctl fail with ENOTTY instead of blocking.  Either way the
 * caller sees an error with child_died set.
 */
static void on_sigchld(int sig)
{
	int saved = errno;
	int fd = active_listener;

	(void)sig;
	child_died = 1;
	if (fd >= 0)
		dup2(devnull_fd, fd);
	errno = saved;
}

/* ------------------------------------------------------------------ */
/* target process                                                      */

enum { ST_OK, ST_AFFINITY, ST_NO_NEW_PRIVS, ST_FILTER };
static const char *const stage_names[] = {
	"ok", "sched_setaffinity", "prctl(PR_SET_NO_NEW_PRIVS)",
	"seccomp(SECCOMP_SET_MODE_FILTER, NEW_LISTENER)"
};

struct target_report {
	int stage;
	int err;
};

static void target_send_report(int sock, int stage, int err, int fd)
{
	struct target_report rep = { stage, err };
	struct iovec iov = { &rep, sizeof(rep) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg;
	struct cmsghdr *cm;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = sizeof(u.buf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	}
	/* If this fails the parent sees EOF and reports it. */
	(void)sendmsg(sock, &msg, MSG_NOSIGNAL);
}

static void target_main(int sock, const cpu_set_t *cpus, pid_t parent)
	__attribute__((noreturn));
static void target_main(int sock, const cpu_set_t *cpus, pid_t parent)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_gettid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog fprog = {
		.len = (unsigned short)(sizeof(filter) / sizeof(filter[0])),
		.filter = filter,
	};
	unsigned int i;
	long fd;

	/* Never outlive the supervisor; the getppid() check closes the race
	 * with a parent that died before prctl() took effect. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 ||
	    getppid() != parent)
		_exit(TARGET_EXIT_SETUP);
	signal(SIGCHLD, SIG_DFL);

	/* Other configurations' listeners must not be kept alive by us. */
	for (i = 0; i < nconfigs; i++)
		if (configs[i].pair.listener >= 0)
			close(configs[i].pair.listener);
	if (probe_pair.listener >= 0)
		close(probe_pair.listener);
	close(devnull_fd);

	/* Set explicitly even when unpinned: the supervisor may be pinned
	 * right now and we would inherit that. */
	if (sched_setaffinity(0, sizeof(*cpus), cpus) != 0) {
		target_send_report(sock, ST_AFFINITY, errno, -1);
		_exit(TARGET_EXIT_SETUP);
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		target_send_report(sock, ST_NO_NEW_PRIVS, errno, -1);
		_exit(TARGET_EXIT_SETUP);
	}
	/*
	 * No arch check in the filter (as in the perf code): this process
	 * only makes native syscalls, and an extra BPF compare would only
	 * add noise to the path being measured.
	 */
	fd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
		     SECCOMP_FILTER_FLAG_NEW_LISTENER, &fprog);
	if (fd < 0) {
		target_send_report(sock, ST_FILTER, errno, -1);
		_exit(TARGET_EXIT_SETUP);
	}
	target_send_report(sock, ST_OK, 0, (int)fd);
	close((int)fd);
	close(sock);

	for (;;) {
		long r = syscall(__NR_gettid);

		if (r != NOTIF_MAGIC)
			_exit(r < 0 ? TARGET_EXIT_ERRNO : TARGET_EXIT_VALUE);
	}
}

/* Fork a target pinned to @cpus and receive its listener fd. */
static void pair_start(struct pair *p, const cpu_set_t *cpus, const char *label)
{
	struct target_report rep;
	struct iovec iov = { &rep, sizeof(rep) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr msg;
	struct cmsghdr *cm;
	pid_t parent = getpid();
	ssize_t n;
	int sv[2], fd = -1;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		die("%s: socketpair: %s", label, strerror(errno));
	fflush(stdout);
	fflush(stderr);
	p->pid = fork();
	if (p->pid < 0) {
		int err = errno;

		close(sv[0]);
		close(sv[1]);
		die("%s: fork: %s", label, strerror(err));
	}
	if (p->pid == 0) {
		close(sv[0]);
		target_main(sv[1], cpus, parent);
	}
	close(sv[1]);

	memset(&msg, 0, sizeof(msg));
	memset(&u, 0, sizeof(u));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = u.buf;
	msg.msg_controllen = sizeof(u.buf);
	do
		n = recvmsg(sv[0], &msg, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		int err = errno;

		close(sv[0]);
		die("%s: recvmsg from target: %s", label, strerror(err));
	}
	close(sv[0]);
	/* EOF: the target exited (or was killed) before reporting. */
	if (n != (ssize_t)sizeof(rep))
		die("%s: target exited during setup", label);
	cm = CMSG_FIRSTHDR(&msg);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS &&
	    cm->cmsg_len == CMSG_LEN(sizeof(int)))
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	if (rep.stage != ST_OK) {
		if (fd >= 0)
			close(fd);
		die("%s: target: %s: %s", label,
		    rep.stage > 0 && rep.stage <= ST_FILTER ?
		    stage_names[rep.stage] : "setup", strerror(rep.err));
	}
	if (fd < 0)
		die("%s: target sent no listener fd", label);
	p->listener = fd;
}

/* ------------------------------------------------------------------ */
/* supervisor side                                                     */

static void set_own_affinity(const struct config *c)
{
	if (sched_setaffinity(0, sizeof(c->sup_cpus), &c->sup_cpus) != 0)
		die("%s: sched_setaffinity (supervisor): %s", c->name,
		    strerror(errno));
}

/* Blocks until the target's next gettid arrives; returns its id. */
static inline uint64_t notif_recv(const struct config *c)
{
	struct seccomp_notif req;

	/* The kernel rejects a non-zeroed buffer with EINVAL. */
	memset(&req, 0, sizeof(req));
	if (ioctl(c->pair.listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0)
		notif_fail(c, "SECCOMP_IOCTL_NOTIF_RECV");
	if (req.data.nr != __NR_gettid)
		die("%s: notification for unexpected syscall %d", c->name,
		    req.data.nr);
	return req.id;
}

static inline void notif_send(const struct config *c, uint64_t id)
{
	struct seccomp_notif_resp resp;

	memset(&resp, 0, sizeof(resp));
	resp.id = id;
	resp.val = NOTIF_MAGIC;
	resp.error = 0;
	resp.flags = 0;
	if (ioctl(c->pair.listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0)
		notif_fail(c, "SECCOMP_IOCTL_NOTIF_SEND");
}

/*
 * The supervisor always holds one received, unanswered notification
 * (pair.pending_id) between samples, so the target is parked inside gettid
 * and a timed loop of SEND+RECV covers exactly @loops full round trips.
 */
static void run_loops(struct config *c, uint64_t loops)
{
	uint64_t id = c->pair.pending_id;
	uint64_t i;

	for (i = 0; i < loops; i++) {
		notif_send(c, id);
		id = notif_recv(c);
	}
	c->pair.pending_id = id;
}

static int64_t ns_between(const struct timespec *t0, const struct timespec *t1)
{
	return (int64_t)(t1->tv_sec - t0->tv_sec) * 1000000000 +
	       (t1->tv_nsec - t0->tv_nsec);
}

/* The CPU the target last ran on: field 39 of /proc/<pid>/stat.  The
 * target is parked in gettid while this runs, so it is where it sleeps. */
static int target_cpu(const struct config *c)
{
	char buf[1024], *p;
	ssize_t n;
	int field;

	n = pread(c->pair.stat_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		die("%s: reading /proc/%d/stat: %s", c->name, (int)c->pair.pid,
		    n < 0 ? strerror(errno) : "empty");
	buf[n] = '\0';
	/* The command name (field 2) is in parentheses and may hold blanks. */
	p = strrchr(buf, ')');
	for (field = 2; p && field < 39; field++)
		p = strchr(p + 1, ' ');
	if (!p)
		die("%s: /proc/%d/stat has no field 39", c->name,
		    (int)c->pair.pid);
	return atoi(p + 1);
}

/* Whether supervisor and target are on one CPU right now. */
static bool probe_same_cpu(const struct config *c)
{
	int cpu = sched_getcpu();

	if (cpu < 0)
		die("%s: sched_getcpu: %s", c->name, strerror(errno));
	return cpu == target_cpu(c);
}

/*
 * Timed round trips of one sample, in ns.  With @where, in PROBE_CHUNKS
 * chunks with a placement probe before, between and after them, the clock
 * stopped while probing; *where says what the probes saw.
 */
static int64_t timed_loops(struct config *c, uint64_t loops, int *where)
{
	struct timespec t0, t1;
	unsigned int k, same = 0;
	int64_t ns = 0;

	if (!where) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		run_loops(c, loops);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		return ns_between(&t0, &t1);
	}
	for (k = 0; k < PROBE_CHUNKS; k++) {
		/* Spread @loops over the chunks; the first ones take the rest. */
		uint64_t n = loops / PROBE_CHUNKS + (k < loops % PROBE_CHUNKS);

		same += probe_same_cpu(c);
		clock_gettime(CLOCK_MONOTONIC, &t0);
		run_loops(c, n);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ns += ns_between(&t0, &t1);
	}
	same += probe_same_cpu(c);
	*where = same == PROBE_CHUNKS + 1 ? WHERE_SAME :
		 same == 0 ? WHERE_CROSS : WHERE_MIXED;
	return ns;
}

/* ------------------------------------------------------------------ */
/* speed checks (--calib-max)                                          */

#define MAX_CHECKS 2
/* Checks before the quartile is the reference (the fastest until then). */
#define CHECK_REF_MIN 8
/* Checks kept for the quartile; later ones are judged, not kept (a run
 * under a budget makes a few thousand). */
#define CHECK_KEEP 16384

struct speed_check {
	pid_t pid;
	int cpu;
	int go_fd;		/* write a byte: spin once */
	int done_fd;		/* read a double: how long it took, us */
	double best_us;		/* fastest so far in this run */
	double *sorted_us;	/* the checks so far, ascending */
	size_t n;
};

static struct speed_check checks[MAX_CHECKS];
static unsigned int nchecks;
static uint64_t check_iters;

static double spin_us(uint64_t n)
{
	struct timespec t0, t1;
	volatile uint64_t x = 0;
	uint64_t i;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < n; i++)
		x += i;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)ns_between(&t0, &t1) / 1000.0;
}

/* Work for one check: doubled until it takes >= 1 ms here and now (a
 * guest timer tick then adds a few percent at most). */
static uint64_t size_check(void)
{
	uint64_t n = 1024;

	while (spin_us(n) < 1000.0 && n < (UINT64_C(1) << 32))
		n *= 2;
	return n;
}

static void check_start(struct speed_check *k, int cpu, pid_t parent)
{
	int go[2], done[2];
	cpu_set_t one;

	if (pipe2(go, O_CLOEXEC) != 0 || pipe2(done, O_CLOEXEC) != 0)
		die("speed check: pipe: %s", strerror(errno));
	k->cpu = cpu;
	k->best_us = INFINITY;
	k->n = 0;
	k->sorted_us = malloc(CHECK_KEEP * sizeof(double));
	if (!k->sorted_us)
		die("speed check: out of memory");
	k->pid = fork();
	if (k->pid < 0)
		die("speed check: fork: %s", strerror(errno));
	if (k->pid == 0) {
		double us;
		char b;

		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0 ||
		    getppid() != parent)
			_exit(1);
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one) != 0)
			_exit(1);
		close(go[1]);
		close(done[0]);
		while (read(go[0], &b, 1) == 1) {
			us = spin_us(check_iters);
			if (write(done[1], &us, sizeof(us)) != sizeof(us))
				_exit(1);
		}
		_exit(0);
	}
	close(go[0]);
	close(done[1]);
	k->go_fd = go[1];
	k->done_fd = done[0];
}

static double check_usual(const struct speed_check *k)
{
	return k->n < CHECK_REF_MIN ? k->best_us : k->sorted_us[(k->n - 1) / 4];
}

/* Keeps @us among @k's checks; returns the time @us is judged against. */
static double check_reference(struct speed_check *k, double us)
{
	size_t i;

	if (us < k->best_us)
		k->best_us = us;
	if (k->n < CHECK_KEEP) {
		for (i = k->n; i > 0 && k->sorted_us[i - 1] > us; i--)
			k->sorted_us[i] = k->sorted_us[i - 1];
		k->sorted_us[i] = us;
		k->n++;
	}
	return check_usual(k);
}

/*
 * Runs the checks in @mask at once (each on its CPU); sets ratio[i] of each
 * check run to its time over that CPU's usual check time (check_reference;
 * 1 = as fast as usual).
 */
static void checks_run(unsigned int mask, double ratio[MAX_CHECKS])
{
	double us[MAX_CHECKS];
	unsigned int i;
	char b = 0;

	for (i = 0; i < nchecks; i++) {
		ssize_t r;

		if (!(mask & (1u << i)))
			continue;
		while ((r = write(checks[i].go_fd, &b, 1)) < 0 && errno == EINTR)
			;
		if (r != 1)
			die("speed check on CPU %d: write: %s", checks[i].cpu,
			    strerror(errno));
	}
	for (i = 0; i < nchecks; i++) {
		ssize_t r;

		if (!(mask & (1u << i)))
			continue;

		while ((r = read(checks[i].done_fd, &us[i], sizeof(us[i]))) < 0 &&
		       errno == EINTR)
			;
		if (r != (ssize_t)sizeof(us[i]))
			die("speed check on CPU %d: no answer (died?)",
			    checks[i].cpu);
		ratio[i] = us[i] / check_reference(&checks[i], us[i]);
	}
}

static void checks_stop(void)
{
	unsigned int i;

	/* Killed, not told: later children (targets, the other check) hold
	 * copies of the pipes' write ends, so no EOF would come. */
	for (i = 0; i < nchecks; i++) {
		kill(checks[i].pid, SIGKILL);
		close(checks[i].go_fd);
		close(checks[i].done_fd);
		while (waitpid(checks[i].pid, NULL, 0) < 0 && errno == EINTR)
			;
		if (checks[i].n)
			fprintf(stderr, "# speed check on CPU %d: usual %.1f us "
				"(first quartile of %zu), fastest %.1f us\n",
				checks[i].cpu, check_usual(&checks[i]),
				checks[i].n, checks[i].best_us);
		free(checks[i].sorted_us);
	}
}

static void config_start(struct config *c);
static void pair_replace(struct config *c);

/* One sample in us per round trip; for a fresh-pair configuration also
 * where it ran (*where), else *where is left alone.  *slow: the speed
 * checks' verdict, 1 without them: the largest, over the sample's CPUs, of
 * the lesser of the CPU's checks before and after it.  A host stretch of
 * half speed lasts a second or more and slows both; a hiccup that slows
 * one 1 ms check by a third costs a 25-60 ms sample a percent or so, and
 * samples set aside on one check were no slower than those kept
 * (docs/measurements.md). */
static double run_sample(struct config *c, uint64_t loops, int *where,
			 double *slow)
{
	double before[MAX_CHECKS], after[MAX_CHECKS];
	unsigned int i;
	int64_t ns;

	/* Unpin first: a target forked by a supervisor still pinned for the
	 * previous configuration would start on that CPU, next to it. */
	set_own_affinity(c);
	if (c->fresh)
		pair_replace(c);
	/* Arm the SIGCHLD escape before checking the flag: no gap where a
	 * death could be missed. */
	active_listener = c->pair.listener;
	if (child_died)
		notif_fail(c, "before sample");

	/*
	 * The pair has been idle while the other configurations ran (or was
	 * just started) and this process may just have migrated; an untimed
	 * burst brings caches and the scheduler's placement to steady state.
	 */
	if (c->check_mask)
		checks_run(c->check_mask, before);
	run_loops(c, loops / 10 < 1000 ? loops / 10 : 1000);

	ns = timed_loops(c, loops, c->fresh ? where : NULL);
	active_listener = -1;
	*slow = 1.0;
	if (c->check_mask) {
		checks_run(c->check_mask, after);
		for (i = 0; i < nchecks; i++) {
			double both = before[i] < after[i] ? before[i] : after[i];

			if (c->check_mask & (1u << i) && both > *slow)
				*slow = both;
		}
	}
	return (double)ns / 1000.0 / (double)loops;
}

/* Start the configuration's target, apply its mode, take the first
 * notification so the pair is in the state run_loops() expects. */
static void config_start(struct config *c)
{
	char path[64];

	c->pair.pid = -1;
	c->pair.listener = -1;
	c->pair.stat_fd = -1;
	pair_start(&c->pair, &c->tgt_cpus, c->name);
	if (c->fresh) {
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)c->pair.pid);
		c->pair.stat_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (c->pair.stat_fd < 0)
			die("%s: open %s: %s", c->name, path, strerror(errno));
	}
	if (c->mode == MODE_SYNC &&
	    ioctl(c->pair.listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
		  (unsigned long)SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) != 0)
		die("%s: SECCOMP_IOCTL_NOTIF_SET_FLAGS: %s", c->name,
		    strerror(errno));
	active_listener = c->pair.listener;
	if (child_died)
		notif_fail(c, "before first notification");
	c->pair.pending_id = notif_recv(c);
	active_listener = -1;
}

/*
 * Replace the configuration's target with a fresh one.  SIGCHLD is blocked
 * while ours is killed and reaped, and the one signal that left pending is
 * taken, so our own kill does not read as a death; a target of another
 * configuration that died meanwhile is looked for (without reaping it, so
 * describe_dead_targets() can still say how) and flagged.
 */
static void pair_replace(struct config *c)
{
	static const struct timespec zero = { 0, 0 };
	sigset_t chld, old;
	unsigned int i;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &chld, &old) != 0)
		die("%s: sigprocmask: %s", c->name, strerror(errno));
	pair_stop(&c->pair);
	while (sigtimedwait(&chld, NULL, &zero) == SIGCHLD)
		;
	for (i = 0; i < nconfigs; i++) {
		siginfo_t si;

		memset(&si, 0, sizeof(si));
		if (configs[i].pair.pid > 0 &&
		    waitid(P_PID, (id_t)configs[i].pair.pid, &si,
			   WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid)
			child_died = 1;
	}
	if (sigprocmask(SIG_SETMASK, &old, NULL) != 0)
		die("%s: sigprocmask: %s", c->name, strerror(errno));
	config_start(c);
}

/*
 * Returns 0 if the kernel has SYNC_WAKE_UP, else EINVAL (what a kernel
 * without the series answers for the unknown ioctl).  Other errors are
 * fatal.  Runs before the SIGCHLD handler exists, so killing the probe
 * target is not mistaken for a failure.
 */
static int probe_sync_wakeup(const cpu_set_t *allowed)
{
	int err = 0;

	pair_start(&probe_pair, allowed, "sync probe");
	if (ioctl(probe_pair.listener, SECCOMP_IOCTL_NOTIF_SET_FLAGS,
		  (unsigned long)SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP) != 0) {
		err = errno;
		if (err != EINVAL)
			die("sync probe: SECCOMP_IOCTL_NOTIF_SET_FLAGS: %s",
			    strerror(err));
	}
	pair_stop(&probe_pair);
	return err;
}

/* ------------------------------------------------------------------ */
/* command line                                                        */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options]\n"
		"  -l, --loops N          round trips per sample (default %d)\n"
		"  -s, --samples N        measured samples per configuration (default %d)\n"
		"  -w, --warmup N         discarded warm-up samples per configuration (default %d)\n"
		"  -m, --modes LIST       comma list of: default, sync (default \"default,sync\")\n"
		"  -p, --placements LIST  comma list of: unpinned, same-cpu, cross-cpu\n"
		"                         (default all three)\n"
		"  -s is the maximum; sampling stops earlier on either of:\n"
		"  -t, --target-ci PCT    every 95%% CI of the median within +-PCT%%\n"
		"                         (0 = off, the default)\n"
		"  -n, --min-samples N    ... but not before N samples (default %d)\n"
		"  -b, --budget-s S       S seconds after the first round (0 = none)\n"
		"  -c, --calib-max R      set aside a sample when on one of its CPUs\n"
		"                         the speed checks before and after it both\n"
		"                         took > R x that CPU's usual check (the first\n"
		"                         quartile so far; e.g. 1.3; 0 = off)\n"
		"  -h, --help             show this help\n"
		"stdout lines: METRIC seccomp_notify.<mode>.<placement> <x.xxx> us/op |\n"
		"              METRIC seccomp_notify.placement.<mode>.unpinned.<class>_share\n"
		"                     <pct> %% (class: same_cpu, cross_cpu, mixed) |\n"
		"              SKIP seccomp_notify.<mode>.<placement> <reason> | ERROR <text>\n",
		prog_name, DEFAULT_LOOPS, DEFAULT_SAMPLES, DEFAULT_WARMUP,
		DEFAULT_MIN_SAMPLES);
}

static void bad_usage(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));
static void bad_usage(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	usage(stderr);
	exit(2);
}

static uint64_t parse_count(const char *opt, const char *s, uint64_t min,
			    uint64_t max)
{
	unsigned long long v;
	char *end;

	errno = 0;
	/* strtoull would silently accept "-1" and leading blanks. */
	if (*s < '0' || *s > '9')
		bad_usage("%s: invalid number '%s'", opt, s);
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		bad_usage("%s: '%s' is not a number in [%llu, %llu]", opt, s,
			  (unsigned long long)min, (unsigned long long)max);
	return v;
}

/* Parses a comma list of @names into a bitmask; duplicates are harmless. */
static unsigned int parse_list(const char *opt, const char *arg,
			       const char *const *names, int nnames)
{
	unsigned int mask = 0;
	const char *p = arg;

	for (;;) {
		size_t len = strcspn(p, ",");
		int i;

		for (i = 0; i < nnames; i++)
			if (strlen(names[i]) == len && !strncmp(p, names[i], len))
				break;
		if (i == nnames)
			bad_usage("%s: unknown item '%.*s' in '%s'", opt,
				  (int)len, p, arg);
		mask |= 1u << i;
		if (!p[len])
			break;
		p += len + 1;
	}
	return mask;
}

static void mask_names(char *buf, size_t len, unsigned int mask,
		       const char *const *names, int nnames)
{
	size_t off = 0;
	int i;

	buf[0] = '\0';
	for (i = 0; i < nnames; i++)
		if ((mask & (1u << i)) && off < len)
			off += snprintf(buf + off, len - off, "%s%s",
					off ? "," : "", names[i]);
}

/* ------------------------------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/*
 * 1-based rank k such that (x(k), x(n+1-k)) is the narrowest order-statistic
 * interval holding the median with >= 95% probability, 0 if n is too small
 * (n < 6).  The number of samples below the true median is Binomial(n, 1/2);
 * take the largest k with P(B <= k-1) <= 0.025.  Log space: 2^-n underflows.
 * Same rule as xtask/src/stats.rs (median_ci_rank).
 */
static unsigned long median_ci_rank(unsigned long n)
{
	double ln_pmf = -(double)n * log(2.0), cdf = 0;
	unsigned long i;

	for (i = 0; i <= n; i++) {
		cdf += exp(ln_pmf);
		if (cdf > 0.025)
			return i;
		ln_pmf += log((double)(n - i) / (double)(i + 1));
	}
	return 0;
}

static double median_of_sorted(const double *x, unsigned long n)
{
	return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

/* Median of a configuration's kept samples (they stay in their order). */
static double config_median(const struct config *c)
{
	double *x = malloc(c->nsamples * sizeof(double));
	double med;

	if (!x)
		return NAN;
	memcpy(x, c->samples, c->nsamples * sizeof(double));
	qsort(x, c->nsamples, sizeof(double), cmp_double);
	med = median_of_sorted(x, c->nsamples);
	free(x);
	return med;
}

/*
 * What a cross-CPU wakeup costs in this boot: the default mode's cross-CPU
 * median minus its same-CPU median. Sync mode saves about that much on an
 * unpinned round trip, so its verdict depends on it, and on a shared host
 * it changes with the host's state (measured: 16-18 us, then 4-5 us for
 * minutes). Reported per boot, in us and in percent of the same-CPU
 * round trip; never compared. matrix.toml judges sync vs default apart in
 * the boots where it is large and where it is small ([within.split]).
 */
static void print_wake_gap(void)
{
	const struct config *same = NULL, *cross = NULL;
	unsigned int i;

	for (i = 0; i < nconfigs; i++) {
		const struct config *c = &configs[i];

		if (c->skip || !c->nsamples || c->mode != MODE_DEFAULT)
			continue;
		if (c->placement == PL_SAME_CPU)
			same = c;
		else if (c->placement == PL_CROSS_CPU)
			cross = c;
	}
	if (same && cross) {
		double s = config_median(same), x = config_median(cross);

		printf("METRIC seccomp_notify.host.wake_gap %.3f us\n", x - s);
		printf("METRIC seccomp_notify.host.wake_gap_pct %.2f %%\n",
		       100.0 * (x - s) / s);
	}
}

/* Half the width of the 95% CI of the median, in percent of the median;
 * INFINITY when n is too small for one. */
static double ci_half_pct(const struct config *c, double *scratch)
{
	unsigned long n = c->nsamples, k;
	double med;

	memcpy(scratch, c->samples, n * sizeof(double));
	qsort(scratch, n, sizeof(double), cmp_double);
	k = median_ci_rank(n);
	med = median_of_sorted(scratch, n);
	if (!k || med <= 0)
		return INFINITY;
	return 50.0 * (scratch[n - k] - scratch[k - 1]) / med;
}

static double seconds_since(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t0->tv_sec) +
	       (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "loops", required_argument, NULL, 'l' },
		{ "samples", required_argument, NULL, 's' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "modes", required_argument, NULL, 'm' },
		{ "placements", required_argument, NULL, 'p' },
		{ "target-ci", required_argument, NULL, 't' },
		{ "min-samples", required_argument, NULL, 'n' },
		{ "budget-s", required_argument, NULL, 'b' },
		{ "calib-max", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	uint64_t loops = DEFAULT_LOOPS;
	unsigned long samples = DEFAULT_SAMPLES, warmup = DEFAULT_WARMUP;
	unsigned long min_samples = DEFAULT_MIN_SAMPLES;
	double target_ci = 0, budget_s = 0, calib_max = 0, *scratch;
	unsigned long measured = 0, disturbed = 0;
	const char *stop_reason = "samples";
	struct timespec t_start;
	unsigned int modes = (1u << NMODES) - 1;
	unsigned int placements = (1u << NPLACEMENTS) - 1;
	char modes_str[64], placements_str[64];
	cpu_set_t allowed;
	int ncpus, cpu_a = -1, cpu_b = -1, sync_err = 0;
	struct sigaction sa;
	unsigned long round;
	unsigned int i;
	int opt, m, pl;

	if (argv[0] && argv[0][0]) {
		const char *slash = strrchr(argv[0], '/');

		prog_name = slash ? slash + 1 : argv[0];
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	opterr = 0;	/* bad_usage() words the complaint itself */
	while ((opt = getopt_long(argc, argv, ":l:s:w:m:p:t:n:b:c:h", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'l':
			loops = parse_count("--loops", optarg, 1,
					    UINT64_C(1) << 40);
			break;
		case 's':
			samples = parse_count("--samples", optarg, 1, 1000000);
			break;
		case 'w':
			warmup = parse_count("--warmup", optarg, 0, 1000000);
			break;
		case 'm':
			modes = parse_list("--modes", optarg, mode_names,
					   NMODES);
			break;
		case 'p':
			placements = parse_list("--placements", optarg,
						placement_names, NPLACEMENTS);
			break;
		case 't':
			target_ci = parse_count("--target-ci", optarg, 0, 100);
			break;
		case 'n':
			min_samples = parse_count("--min-samples", optarg, 6,
						  1000000);
			break;
		case 'b':
			budget_s = parse_count("--budget-s", optarg, 0, 86400);
			break;
		case 'c': {
			char *end;

			errno = 0;
			calib_max = strtod(optarg, &end);
			if (errno || *end || !(calib_max == 0 ||
					       (calib_max > 1 && calib_max <= 100)))
				bad_usage("--calib-max: '%s' is not 0 or a ratio in (1, 100]",
					  optarg);
			break;
		}
		case 'h':
			usage(stderr);
			return 0;
		case ':':
			bad_usage("option '%s' needs an argument",
				  argv[optind - 1]);
		default:
			/* optopt is 0 for an unknown long option. */
			if (optopt)
				bad_usage("unknown option '-%c'", optopt);
			bad_usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		bad_usage("unexpected argument '%s'", argv[optind]);

	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		die("sched_getaffinity: %s", strerror(errno));
	ncpus = CPU_COUNT(&allowed);
	for (i = 0; i < CPU_SETSIZE; i++) {
		if (!CPU_ISSET(i, &allowed))
			continue;
		if (cpu_a < 0)
			cpu_a = (int)i;
		else if (cpu_b < 0)
			cpu_b = (int)i;
	}

	mask_names(modes_str, sizeof(modes_str), modes, mode_names, NMODES);
	mask_names(placements_str, sizeof(placements_str), placements,
		   placement_names, NPLACEMENTS);
	fprintf(stderr, "# %s: loops=%llu samples=%lu warmup=%lu modes=%s "
		"placements=%s target-ci=%g%% min-samples=%lu budget=%gs "
		"calib-max=%g cpus=%d (first=%d second=%d)\n", prog_name,
		(unsigned long long)loops, samples, warmup, modes_str,
		placements_str, target_ci, min_samples, budget_s, calib_max,
		ncpus, cpu_a, cpu_b);

	devnull_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull_fd < 0)
		die("open /dev/null: %s", strerror(errno));

	if (modes & (1u << MODE_SYNC))
		sync_err = probe_sync_wakeup(&allowed);

	for (m = 0; m < NMODES; m++) {
		if (!(modes & (1u << m)))
			continue;
		for (pl = 0; pl < NPLACEMENTS; pl++) {
			struct config *c;

			if (!(placements & (1u << pl)))
				continue;
			c = &configs[nconfigs++];
			snprintf(c->name, sizeof(c->name), "seccomp_notify.%s.%s",
				 mode_names[m], placement_names[pl]);
			c->mode = m;
			c->placement = pl;
			c->pair.pid = -1;
			c->pair.listener = -1;
			c->pair.stat_fd = -1;
			c->fresh = pl == PL_UNPINNED;
			c->sup_cpus = allowed;
			c->tgt_cpus = allowed;
			if (m == MODE_SYNC && sync_err) {
				c->skip = true;
				snprintf(c->skip_reason, sizeof(c->skip_reason),
					 "SECCOMP_IOCTL_NOTIF_SET_FLAGS: %s "
					 "(kernel lacks SECCOMP_USER_NOTIF_FD_SYNC_WAKE_UP)",
					 sync_err == EINVAL ? "EINVAL" :
					 strerror(sync_err));
			} else if (pl == PL_CROSS_CPU && ncpus < 2) {
				c->skip = true;
				snprintf(c->skip_reason, sizeof(c->skip_reason),
					 "needs 2 CPUs, have %d", ncpus);
			} else if (pl == PL_SAME_CPU) {
				CPU_ZERO(&c->sup_cpus);
				CPU_SET(cpu_a, &c->sup_cpus);
				c->tgt_cpus = c->sup_cpus;
			} else if (pl == PL_CROSS_CPU) {
				CPU_ZERO(&c->sup_cpus);
				CPU_SET(cpu_a, &c->sup_cpus);
				CPU_ZERO(&c->tgt_cpus);
				CPU_SET(cpu_b, &c->tgt_cpus);
			}
		}
	}

	for (i = 0; i < nconfigs; i++)
		if (configs[i].skip)
			printf("SKIP %s %s\n", configs[i].name,
			       configs[i].skip_reason);

	if (calib_max > 0) {
		check_iters = size_check();
		check_start(&checks[nchecks++], cpu_a, getpid());
		if (cpu_b >= 0)
			check_start(&checks[nchecks++], cpu_b, getpid());
		for (i = 0; i < nconfigs; i++)
			configs[i].check_mask =
				configs[i].placement == PL_SAME_CPU ?
				1u : (1u << nchecks) - 1;
		fprintf(stderr, "# speed checks: %llu iterations on CPU%s %d%s",
			(unsigned long long)check_iters, nchecks > 1 ? "s" : "",
			cpu_a, nchecks > 1 ? " and " : "\n");
		if (nchecks > 1)
			fprintf(stderr, "%d\n", cpu_b);
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigchld;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a blocked RECV must return EINTR.  NOCLDSTOP: only
	 * deaths matter, not job-control stops. */
	sa.sa_flags = SA_NOCLDSTOP;
	if (sigaction(SIGCHLD, &sa, NULL) != 0)
		die("sigaction(SIGCHLD): %s", strerror(errno));

	for (i = 0; i < nconfigs; i++) {
		struct config *c = &configs[i];

		if (c->skip)
			continue;
		c->samples = calloc(samples, sizeof(double));
		if (!c->samples)
			die("out of memory");
		config_start(c);
	}

	scratch = calloc(samples, sizeof(double));
	if (!scratch)
		die("out of memory");
	clock_gettime(CLOCK_MONOTONIC, &t_start);
	for (round = 0; round < warmup + samples; round++) {
		bool within = target_ci > 0;
		unsigned long n = 0;

		for (i = 0; i < nconfigs; i++) {
			struct config *c = &configs[i];
			int where = -1;
			double us, slow;

			if (c->skip)
				continue;
			us = run_sample(c, loops, &where, &slow);
			if (round < warmup) {
				fprintf(stderr, "# warmup %s %.3f us/op%s%s\n",
					c->name, us, where < 0 ? "" : " ",
					where < 0 ? "" : where_names[where]);
				continue;
			}
			measured++;
			if (calib_max > 0 && slow > calib_max) {
				disturbed++;
				c->disturbed++;
				printf("# disturbed %s %.3f us/op slow=%.2f\n",
				       c->name, us, slow);
				if (within && c->nsamples < min_samples)
					within = false;
				continue;
			}
			if (where >= 0)
				c->where[where]++;
			c->samples[c->nsamples++] = us;
			printf("METRIC %s %.3f us/op\n", c->name, us);
			n = c->nsamples;
			if (within && (n < min_samples ||
				       ci_half_pct(c, scratch) > target_ci))
				within = false;
		}
		if (round < warmup)
			continue;
		if (within && n) {
			stop_reason = "target";
			break;
		}
		if (budget_s > 0 && seconds_since(&t_start) >= budget_s) {
			/* With speed checks a configuration may be short of
			 * --min-samples kept when the budget ends: it gets up
			 * to the budget again to reach them. */
			bool short_of = false;
			double t = seconds_since(&t_start);

			for (i = 0; i < nconfigs; i++)
				if (!configs[i].skip &&
				    configs[i].nsamples < min_samples)
					short_of = true;
			if (!short_of || !calib_max || t >= 2 * budget_s) {
				stop_reason = "budget";
				break;
			}
		}
	}
	fprintf(stderr, "# stop: %s after %lu rounds (%lu warm-up) in %.1f s\n",
		stop_reason, round + (round < warmup + samples), warmup,
		seconds_since(&t_start));
	free(scratch);

	teardown_all();
	if (nchecks) {
		double best = INFINITY;

		checks_stop();
		for (i = 0; i < nchecks; i++)
			if (checks[i].best_us < best)
				best = checks[i].best_us;
		printf("METRIC seccomp_notify.host.disturbed_share %.1f %%\n",
		       measured ? 100.0 * (double)disturbed / (double)measured : 0.0);
		/* A rate, not a time: each boot sizes its check anew. */
		printf("METRIC seccomp_notify.host.check_speed %.1f iter/us\n",
		       (double)check_iters / best);
		fprintf(stderr, "# speed checks: %lu of %lu samples set aside "
			"(slower than %gx the usual check)\n", disturbed, measured,
			calib_max);
	}

	for (i = 0; i < nconfigs; i++) {
		struct config *c = &configs[i];
		int w;

		if (c->skip || !c->fresh || !c->nsamples)
			continue;
		for (w = 0; w < NWHERE; w++)
			printf("METRIC seccomp_notify.placement.%s.%s.%s_share "
			       "%.1f %%\n", mode_names[c->mode],
			       placement_names[PL_UNPINNED], where_names[w],
			       100.0 * (double)c->where[w] /
			       (double)c->nsamples);
	}

	print_wake_gap();

	for (i = 0; i < nconfigs; i++) {
		struct config *c = &configs[i];

		if (c->skip || !c->nsamples)
			continue;
		qsort(c->samples, c->nsamples, sizeof(double), cmp_double);
		fprintf(stderr, "# summary %s: median %.3f min %.3f max %.3f "
			"us/op (n=%lu)\n", c->name,
			median_of_sorted(c->samples, c->nsamples),
			c->samples[0], c->samples[c->nsamples - 1],
			c->nsamples);
		free(c->samples);
	}
	return 0;
}
