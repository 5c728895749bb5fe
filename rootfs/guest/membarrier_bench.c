// SPDX-License-Identifier: GPL-2.0
/*
 * membarrier_bench - cost of one expedited membarrier(2) call, in us/call.
 *
 * membarrier's expedited commands make every other CPU that is running a
 * thread of the target set execute a full memory barrier, by IPI, and wait
 * for them; CPUs running something else are skipped (their next switch to
 * one of our threads implies the barrier).  So the cost depends on what the
 * other CPU runs, and that is what the configurations vary.  A sibling
 * thread of this process is pinned to the second allowed CPU, the caller
 * to the first; the sibling is either
 *   ipi   spinning in user space (its CPU must be interrupted), or
 *   idle  blocked in a futex wait (its CPU runs the idle task: no IPI).
 *
 * Configurations (metric membarrier.<command>.<sibling>):
 *   private_expedited.ipi / .idle
 *       MEMBARRIER_CMD_PRIVATE_EXPEDITED after
 *       MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED
 *   private_expedited_rseq.ipi
 *       MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ (restart the rseq critical
 *       sections of the other CPUs) after its register command; needs
 *       CONFIG_RSEQ, else EINVAL -> SKIP
 *   global_expedited.ipi / .idle
 *       MEMBARRIER_CMD_GLOBAL_EXPEDITED after
 *       MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED (IPIs the CPUs running a
 *       registered process; ours is the only one)
 * A command the kernel does not offer (MEMBARRIER_CMD_QUERY mask, or its
 * register command fails with EINVAL) is a SKIP; no membarrier at all
 * (ENOSYS: no CONFIG_MEMBARRIER) skips everything.  With one allowed CPU
 * the .ipi configurations are SKIPs; .idle still runs (sibling and caller
 * then share the CPU, and there is no other CPU to interrupt anyway).
 *
 * Before a sample the sibling is switched to the configuration's state and
 * we wait until it is there: it acknowledges the spin mode from inside the
 * spin loop's entry, and for idle we wait until /proc/self/task/TID/stat
 * says S (sleeping), i.e. it really left its CPU.
 *
 * Sampling, as in seccomp_notify_bench.c: one sample = --loops calls timed
 * with CLOCK_MONOTONIC after an untimed burst of a tenth as many; --loops 0
 * (the default) calibrates each configuration during warm-up to about
 * --sample-us per sample.  Samples are taken round-robin after --warmup
 * rounds and stop at --samples rounds, or when --target-ci PCT is met by
 * every configuration (distribution-free 95% CI of the median within
 * +-PCT%, not before --min-samples), or --budget-s seconds after the first
 * measured round.
 *
 * Output on stdout, line buffered, nothing else:
 *   METRIC membarrier.<command>.<sibling> <us per call, 3 decimals> us/call
 *   SKIP membarrier.<command>.<sibling> <reason>      (before any METRIC)
 *   ERROR <text>                                      (then exit 1)
 * Everything else goes to stderr.  Exit status: 0 success (also with
 * skips), 1 ERROR, 2 bad command line.
 *
 * Build: gcc -static -O2 -Wall -Wextra -Werror -o membarrier_bench \
 *            membarrier_bench.c -lm -lpthread
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>

#ifndef __NR_membarrier
#error "uapi headers without __NR_membarrier"
#endif

#define DEFAULT_LOOPS 0		/* calibrate */
#define DEFAULT_SAMPLE_US 2000
#define DEFAULT_SAMPLES 20
#define DEFAULT_WARMUP 1
#define DEFAULT_MIN_SAMPLES 10
#define DEFAULT_SETTLE_MS 10

enum sib_mode { SIB_BLOCK, SIB_SPIN, SIB_EXIT };
static const char *const sib_names[] = { "idle", "ipi" };

/* The futex word the sibling sleeps on is the mode itself. */
static uint32_t sib_mode = SIB_BLOCK;
/* Advanced by the spinning sibling: proof that it is on its CPU now. */
static uint64_t sib_spins __attribute__((aligned(64)));
static uint32_t sib_ack = UINT32_MAX;
static pid_t sib_tid;
static int cpu_a = -1, cpu_b = -1, ncpus;
static const char *prog_name = "membarrier_bench";

struct command {
	const char *name;
	int cmd;
	int register_cmd;
	bool available;
	char why_not[160];
};

static struct command commands[] = {
	{ .name = "private_expedited",
	  .cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED,
	  .register_cmd = MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED },
	{ .name = "private_expedited_rseq",
	  .cmd = MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ,
	  .register_cmd = MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ },
	{ .name = "global_expedited",
	  .cmd = MEMBARRIER_CMD_GLOBAL_EXPEDITED,
	  .register_cmd = MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED },
};
enum { C_PRIV, C_PRIV_RSEQ, C_GLOBAL };

struct config {
	int command;
	enum sib_mode mode;
	char name[96];
	bool skip;
	char skip_reason[200];
	uint64_t loops;
	double *samples;
	unsigned long nsamples;
};

/* Grouped by sibling mode: two mode switches per round. */
static struct config configs[] = {
	{ .command = C_PRIV, .mode = SIB_SPIN },
	{ .command = C_PRIV_RSEQ, .mode = SIB_SPIN },
	{ .command = C_GLOBAL, .mode = SIB_SPIN },
	{ .command = C_PRIV, .mode = SIB_BLOCK },
	{ .command = C_GLOBAL, .mode = SIB_BLOCK },
};
#define NCONFIGS (sizeof(configs) / sizeof(configs[0]))

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
	fflush(stderr);
	/* No exit handlers: this may run on the sibling thread, and the
	 * sibling ends with the process anyway. */
	_exit(1);
}

static long membarrier(int cmd, unsigned int flags)
{
	return syscall(__NR_membarrier, cmd, flags, 0);
}

static long futex(uint32_t *uaddr, int op, uint32_t val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__asm__ __volatile__("pause" ::: "memory");
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

/* ------------------------------------------------------------------ */
/* the sibling thread                                                  */

static void *sibling_main(void *arg)
{
	cpu_set_t set;

	(void)arg;
	__atomic_store_n(&sib_tid, (pid_t)syscall(SYS_gettid),
			 __ATOMIC_RELEASE);
	CPU_ZERO(&set);
	CPU_SET(ncpus >= 2 ? cpu_b : cpu_a, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		die("sched_setaffinity (sibling): %s", strerror(errno));
	for (;;) {
		uint32_t m = __atomic_load_n(&sib_mode, __ATOMIC_ACQUIRE);

		__atomic_store_n(&sib_ack, m, __ATOMIC_RELEASE);
		switch (m) {
		case SIB_SPIN: {
			uint64_t n = 0;

			while (__atomic_load_n(&sib_mode, __ATOMIC_RELAXED) ==
			       SIB_SPIN) {
				__atomic_store_n(&sib_spins, ++n,
						 __ATOMIC_RELAXED);
				cpu_relax();
			}
			break;
		}
		case SIB_BLOCK:
			/* Returns at once if the mode changed already. */
			futex(&sib_mode, FUTEX_WAIT_PRIVATE, SIB_BLOCK);
			break;
		default:
			return NULL;
		}
	}
}

/* 'S' when the thread sleeps, '?' when /proc cannot tell. */
static char thread_state(void)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)sib_tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return '?';
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] ? p[2] : '?';
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

static double settle_ms = DEFAULT_SETTLE_MS;
static double now_ns(void);

static void set_sibling(enum sib_mode m)
{
	bool changed = __atomic_load_n(&sib_mode, __ATOMIC_RELAXED) != m;
	int i;

	__atomic_store_n(&sib_mode, m, __ATOMIC_RELEASE);
	futex(&sib_mode, FUTEX_WAKE_PRIVATE, 1);
	if (m == SIB_EXIT)
		return;
	for (i = 0; __atomic_load_n(&sib_ack, __ATOMIC_ACQUIRE) != m; i++) {
		if (i > 200000)
			die("sibling does not acknowledge mode %d", m);
		if (i > 1000)
			sleep_us(10);
	}
	if (m == SIB_SPIN && changed) {
		/*
		 * Both CPUs busy for a while before measuring: a CPU that was
		 * just idle is slow for some milliseconds where the (v)CPU
		 * itself is a thread of a host (on the development host the
		 * first .ipi configuration after the switch took 19 us per
		 * call, the next ones 0.5 us).  The caller spins too.
		 */
		double t0 = now_ns();

		while (now_ns() - t0 < settle_ms * 1e6)
			cpu_relax();
	}
	if (m != SIB_BLOCK)
		return;
	/* Acknowledged just before futex_wait: wait until it sleeps. */
	for (i = 0; i < 20000; i++) {
		char s = thread_state();

		if (s == 'S')
			return;
		if (s == '?') {
			sleep_us(5000);
			return;
		}
		sleep_us(50);
	}
	die("sibling did not go to sleep within 1 s");
}

static pthread_t sib_thread;
static bool sib_started;

static void stop_sibling(void)
{
	if (!sib_started)
		return;
	set_sibling(SIB_EXIT);
	pthread_join(sib_thread, NULL);
	sib_started = false;
}

/* ------------------------------------------------------------------ */
/* measuring                                                           */

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static void run_calls(const struct config *c, uint64_t n)
{
	int cmd = commands[c->command].cmd;
	uint64_t i;

	for (i = 0; i < n; i++)
		if (membarrier(cmd, 0) != 0)
			die("%s: membarrier(%d): %s", c->name, cmd,
			    strerror(errno));
}

/* The sibling's involuntary context switches so far, -1 if unknown. */
static long sibling_nvcsw(void)
{
	static const char key[] = "nonvoluntary_ctxt_switches:";
	char path[64], buf[4096], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/self/task/%d/status", (int)sib_tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strstr(buf, key);
	return p ? strtol(p + sizeof(key) - 1, NULL, 10) : -1;
}

static unsigned long retried, kept_preempted;

/* Wait (bounded) until the spinning sibling is seen running. */
static bool sibling_on_cpu(void)
{
	uint64_t s0 = __atomic_load_n(&sib_spins, __ATOMIC_RELAXED);
	double t0 = now_ns();

	while (__atomic_load_n(&sib_spins, __ATOMIC_RELAXED) == s0) {
		if (now_ns() - t0 > 200e6)
			return false;
		cpu_relax();
	}
	return true;
}

/*
 * us per call.  An .ipi sample is only valid if the sibling held its CPU
 * throughout, since no IPI is needed while it is off the CPU.  So: read its
 * involuntary context switch count, wait until its spin counter moves (it
 * is running now), measure, and check the count did not change (a spinning
 * thread leaves the CPU only by preemption).  A sample that fails this is
 * taken again, up to 4 times, then kept and counted, so contention on the
 * sibling's CPU shows on stderr instead of as a second mode in the samples.
 * Without /proc only the running-at-start check is made.
 */
static double run_sample(struct config *c)
{
	double t0, us;
	long nv0, nv1;
	bool running;
	int attempt;

	set_sibling(c->mode);
	for (attempt = 0;; attempt++) {
		run_calls(c, c->loops / 10 ? c->loops / 10 : 1);
		nv0 = c->mode == SIB_SPIN ? sibling_nvcsw() : -1;
		running = c->mode != SIB_SPIN || sibling_on_cpu();
		t0 = now_ns();
		run_calls(c, c->loops);
		us = (now_ns() - t0) / 1e3 / (double)c->loops;
		nv1 = nv0 < 0 ? -1 : sibling_nvcsw();
		if (running && nv1 == nv0)
			return us;
		if (attempt == 4) {
			kept_preempted++;
			return us;
		}
		retried++;
	}
}

static void calibrate(struct config *c, double sample_us)
{
	set_sibling(c->mode);
	run_calls(c, 10);
	for (c->loops = 10;; c->loops *= 2) {
		double t0 = now_ns();

		run_calls(c, c->loops);
		if (now_ns() - t0 >= sample_us * 1e3 || c->loops >= 10000000)
			break;
	}
}

/* ------------------------------------------------------------------ */
/* command line and statistics (as in seccomp_notify_bench.c)          */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options]\n"
		"  -l, --loops N          calls per sample, 0 = calibrate to\n"
		"                         --sample-us (default %d)\n"
		"  -u, --sample-us US     calibration target per sample (default %d)\n"
		"  -s, --samples N        measured samples per configuration (default %d)\n"
		"  -w, --warmup N         discarded warm-up samples (default %d)\n"
		"  -t, --target-ci PCT    stop when every 95%% CI of the median is\n"
		"                         within +-PCT%% (0 = off, the default)\n"
		"  -n, --min-samples N    ... but not before N samples (default %d)\n"
		"  -b, --budget-s S       stop S seconds after the first round (0 = none)\n"
		"  -S, --settle-ms MS     busy time after waking the sibling to spin\n"
		"                         (default %d)\n"
		"  -h, --help             show this help\n"
		"stdout lines: METRIC membarrier.<command>.<ipi|idle> <x.xxx> us/call |\n"
		"              SKIP membarrier.<command>.<ipi|idle> <reason> | ERROR <text>\n",
		prog_name, DEFAULT_LOOPS, DEFAULT_SAMPLE_US, DEFAULT_SAMPLES,
		DEFAULT_WARMUP, DEFAULT_MIN_SAMPLES, DEFAULT_SETTLE_MS);
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
	if (*s < '0' || *s > '9')
		bad_usage("%s: invalid number '%s'", opt, s);
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		bad_usage("%s: '%s' is not a number in [%llu, %llu]", opt, s,
			  (unsigned long long)min, (unsigned long long)max);
	return v;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

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

/* Which commands can run: QUERY, then each one's register command. */
static void probe_commands(void)
{
	long mask = membarrier(MEMBARRIER_CMD_QUERY, 0);
	unsigned int i;

	if (mask < 0) {
		int err = errno;

		for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
			snprintf(commands[i].why_not,
				 sizeof(commands[i].why_not),
				 "membarrier(MEMBARRIER_CMD_QUERY): %s%s",
				 err == ENOSYS ? "ENOSYS" : strerror(err),
				 err == ENOSYS ?
				 " (kernel without CONFIG_MEMBARRIER)" : "");
		fprintf(stderr, "# membarrier: %s\n", commands[0].why_not);
		return;
	}
	fprintf(stderr, "# membarrier QUERY mask 0x%lx\n", mask);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		struct command *c = &commands[i];

		if (!(mask & c->cmd)) {
			snprintf(c->why_not, sizeof(c->why_not),
				 "MEMBARRIER_CMD_%s (0x%x) not in the QUERY "
				 "mask 0x%lx%s", c->name, c->cmd, mask,
				 c->cmd == MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ ?
				 " (kernel without CONFIG_RSEQ?)" : "");
			continue;
		}
		if (membarrier(c->register_cmd, 0) != 0) {
			int err = errno;

			if (err != EINVAL)
				die("membarrier register for %s (0x%x): %s",
				    c->name, c->register_cmd, strerror(err));
			snprintf(c->why_not, sizeof(c->why_not),
				 "register command 0x%x: EINVAL%s",
				 c->register_cmd,
				 c->cmd == MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ ?
				 " (kernel without CONFIG_RSEQ)" : "");
			continue;
		}
		c->available = true;
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "loops", required_argument, NULL, 'l' },
		{ "sample-us", required_argument, NULL, 'u' },
		{ "samples", required_argument, NULL, 's' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "target-ci", required_argument, NULL, 't' },
		{ "min-samples", required_argument, NULL, 'n' },
		{ "budget-s", required_argument, NULL, 'b' },
		{ "settle-ms", required_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	uint64_t loops = DEFAULT_LOOPS;
	unsigned long samples = DEFAULT_SAMPLES, warmup = DEFAULT_WARMUP;
	unsigned long min_samples = DEFAULT_MIN_SAMPLES, round;
	double target_ci = 0, budget_s = 0, sample_us = DEFAULT_SAMPLE_US;
	double *scratch, t_start;
	const char *stop_reason = "samples";
	cpu_set_t allowed, set;
	unsigned int i;
	bool any = false;
	int opt, c0, err;

	if (argv[0] && argv[0][0]) {
		const char *slash = strrchr(argv[0], '/');

		prog_name = slash ? slash + 1 : argv[0];
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":l:u:s:w:t:n:b:S:h", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'l':
			loops = parse_count("--loops", optarg, 0, 1000000000);
			break;
		case 'u':
			sample_us = parse_count("--sample-us", optarg, 10,
						10000000);
			break;
		case 's':
			samples = parse_count("--samples", optarg, 1, 1000000);
			break;
		case 'w':
			warmup = parse_count("--warmup", optarg, 0, 1000000);
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
		case 'S':
			settle_ms = parse_count("--settle-ms", optarg, 0, 10000);
			break;
		case 'h':
			usage(stderr);
			return 0;
		case ':':
			bad_usage("option '%s' needs an argument",
				  argv[optind - 1]);
		default:
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
	for (c0 = 0; c0 < CPU_SETSIZE; c0++) {
		if (!CPU_ISSET(c0, &allowed))
			continue;
		if (cpu_a < 0)
			cpu_a = c0;
		else if (cpu_b < 0)
			cpu_b = c0;
	}
	fprintf(stderr, "# %s: loops=%llu%s sample-us=%g samples=%lu warmup=%lu "
		"target-ci=%g%% min-samples=%lu budget=%gs settle=%gms cpus=%d "
		"(caller %d, sibling %d)\n", prog_name, (unsigned long long)loops,
		loops ? "" : " (calibrate)", sample_us, samples, warmup,
		target_ci, min_samples, budget_s, settle_ms, ncpus, cpu_a,
		ncpus >= 2 ? cpu_b : cpu_a);

	probe_commands();
	for (i = 0; i < NCONFIGS; i++) {
		struct config *c = &configs[i];
		const struct command *cmd = &commands[c->command];

		snprintf(c->name, sizeof(c->name), "membarrier.%s.%s",
			 cmd->name, sib_names[c->mode]);
		if (!cmd->available) {
			c->skip = true;
			snprintf(c->skip_reason, sizeof(c->skip_reason), "%s",
				 cmd->why_not);
		} else if (c->mode == SIB_SPIN && ncpus < 2) {
			c->skip = true;
			snprintf(c->skip_reason, sizeof(c->skip_reason),
				 "needs 2 CPUs, have %d", ncpus);
		}
		if (c->skip)
			printf("SKIP %s %s\n", c->name, c->skip_reason);
		else
			any = true;
	}
	if (!any)
		return 0;

	CPU_ZERO(&set);
	CPU_SET(cpu_a, &set);
	if (sched_setaffinity(0, sizeof(set), &set) != 0)
		die("sched_setaffinity (caller): %s", strerror(errno));
	err = pthread_create(&sib_thread, NULL, sibling_main, NULL);
	if (err)
		die("pthread_create: %s", strerror(err));
	sib_started = true;
	while (!__atomic_load_n(&sib_tid, __ATOMIC_ACQUIRE))
		sleep_us(100);

	for (i = 0; i < NCONFIGS; i++) {
		struct config *c = &configs[i];

		if (c->skip)
			continue;
		c->samples = calloc(samples, sizeof(double));
		if (!c->samples)
			die("out of memory");
		c->loops = loops;
		if (!loops)
			calibrate(c, sample_us);
		fprintf(stderr, "# %s: %llu calls per sample\n", c->name,
			(unsigned long long)c->loops);
	}

	scratch = calloc(samples, sizeof(double));
	if (!scratch)
		die("out of memory");
	t_start = now_ns();
	for (round = 0; round < warmup + samples; round++) {
		bool within = target_ci > 0;
		unsigned long n = 0;

		if (round == warmup)
			t_start = now_ns();
		for (i = 0; i < NCONFIGS; i++) {
			struct config *c = &configs[i];
			double us;

			if (c->skip)
				continue;
			us = run_sample(c);
			if (round < warmup) {
				fprintf(stderr, "# warmup %s %.3f us/call\n",
					c->name, us);
				continue;
			}
			c->samples[c->nsamples++] = us;
			printf("METRIC %s %.3f us/call\n", c->name, us);
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
		if (budget_s > 0 && (now_ns() - t_start) / 1e9 >= budget_s) {
			stop_reason = "budget";
			break;
		}
	}
	fprintf(stderr, "# stop: %s after %lu rounds (%lu warm-up) in %.1f s\n",
		stop_reason, round + (round < warmup + samples), warmup,
		(now_ns() - t_start) / 1e9);
	free(scratch);
	stop_sibling();
	fprintf(stderr, "# sibling preempted during an .ipi sample: %lu samples "
		"taken again, %lu kept after 5 tries\n", retried, kept_preempted);

	for (i = 0; i < NCONFIGS; i++) {
		struct config *c = &configs[i];

		if (c->skip || !c->nsamples)
			continue;
		qsort(c->samples, c->nsamples, sizeof(double), cmp_double);
		fprintf(stderr, "# summary %s: median %.3f min %.3f max %.3f "
			"us/call (n=%lu)\n", c->name,
			median_of_sorted(c->samples, c->nsamples),
			c->samples[0], c->samples[c->nsamples - 1],
			c->nsamples);
		free(c->samples);
	}
	return 0;
}
