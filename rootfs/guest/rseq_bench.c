// SPDX-License-Identifier: GPL-2.0
/*
 * rseq_bench - restartable sequences versus the alternatives, in ns/op.
 *
 * Mirrors, cell for cell, the benchmark table of the rseq merge (4.18,
 * "rseq: Introduce restartable sequences system call"):
 *
 *   per-cpu counter increment        getcpu+atomic 15.3 ns   rseq 2.0 ns
 *   reading the current CPU number   rseq area 0.8 ns, glibc sched_getcpu
 *                                    16.6 ns, getcpu syscall 53.9 ns
 *
 * Configurations (metric <prefix>.<name>, prefix "rseq" unless --prefix):
 *   counter.rseq          increment this CPU's slot of a per-cpu counter
 *                         array in a real rseq critical section: read
 *                         cpu_id_start, then in inline asm (x86_64 and
 *                         aarch64, the shape of the kernel selftests'
 *                         rseq_addv) publish the rseq_cs descriptor, compare
 *                         cpu_id with the CPU read, and commit with the
 *                         final store; on abort (preemption, migration,
 *                         signal) retry.
 *   counter.atomic        cpu = sched_getcpu(), then __atomic_fetch_add on
 *                         that CPU's slot (a locked RMW; what code without
 *                         rseq has to do, the merge's "getcpu+atomic").
 *   cpu_id.rseq_area      one load of the cpu_id field of the rseq area.
 *   cpu_id.sched_getcpu   glibc's sched_getcpu(): since glibc 2.35 this
 *                         reads glibc's own rseq area when glibc registered
 *                         it; otherwise it is the vDSO getcpu (x86_64) or
 *                         the getcpu syscall (aarch64 has no vDSO getcpu).
 *   cpu_id.getcpu_syscall syscall(SYS_getcpu).
 *
 * Registration.  glibc >= 2.35 registers an rseq area for every thread
 * (unless GLIBC_TUNABLES=glibc.pthread.rseq=0); only one area per thread is
 * allowed, so when glibc registered one (__rseq_size > 0 and its cpu_id is
 * valid) this program adopts it at thread pointer + __rseq_offset, as the
 * kernel selftests do.  Otherwise it registers its own with rseq(2) and the
 * signature glibc and the selftests use (x86: 0x53053053, the immediate of
 * a ud1; aarch64: 0xd428bc00, BRK #0x45E0), which must precede every abort
 * handler.  The registration used ("glibc", "own", or "none") goes to
 * stderr.  --no-glibc-rseq re-executes the program with the tunable set, so
 * a harness without per-test environment variables can run both ways
 * (combine with --prefix to give that run its own metric names).  Without
 * rseq in the kernel (ENOSYS) the counter.rseq and cpu_id.rseq_area
 * configurations print SKIP lines; the rest still run.
 *
 * The measuring thread is pinned to the first allowed CPU, so aborts are
 * rare (they are counted and printed on stderr); the increments are checked
 * afterwards: the per-cpu rseq slots must add up to the increments made.
 *
 * Sampling: one sample = --loops operations timed with CLOCK_MONOTONIC,
 * reported as ns per operation including the loop.  --loops 0 (the
 * default) calibrates each configuration during warm-up so one sample
 * takes about --sample-us microseconds (the syscall needs ~100x fewer
 * iterations than a load; TCG is 10-50x slower than hardware).  Samples are
 * taken round-robin (sample k of every configuration before sample k+1 of
 * any) after --warmup rounds, and stop at the first of:
 *   - --samples rounds measured;
 *   - --target-ci PCT: every configuration has >= --min-samples samples and
 *     the distribution-free 95% CI of its median is within +-PCT% of it;
 *   - --budget-s S seconds since the first measured round began.
 *
 * Output on stdout, line buffered, nothing else:
 *   METRIC <prefix>.<name> <ns per op, 3 decimals> ns/op   (one per sample)
 *   SKIP <prefix>.<name> <reason>                          (before METRICs)
 *   ERROR <text>                                           (then exit 1)
 * Everything else (registration, calibration, summary) goes to stderr.
 * Exit status: 0 success (also with skips), 1 ERROR, 2 bad command line.
 *
 * Build: gcc -static -O2 -Wall -Wextra -Werror -o rseq_bench rseq_bench.c -lm
 *        aarch64-linux-gnu-gcc -static -O2 -Wall -Wextra -Werror ... (same)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/rseq.h>
#include <sys/syscall.h>

#if !defined(__x86_64__) && !defined(__aarch64__)
#error "rseq_bench: the critical section is written for x86_64 and aarch64"
#endif

/* Signature before every abort handler; must equal what the registration
 * (ours or glibc's) was made with.  Values of the selftests' rseq-*.h. */
#if defined(__x86_64__)
#define KR_SIG 0x53053053
#define KR_SIG_STR "0x53053053"
#else
#define KR_SIG_CODE_STR "0xd428bc00"	/* BRK #0x45E0 */
#ifdef __AARCH64EB__
#define KR_SIG 0x00bc28d4
#else
#define KR_SIG 0xd428bc00
#endif
#endif
#if defined(RSEQ_SIG)
_Static_assert(RSEQ_SIG == KR_SIG, "glibc registers with another signature");
#endif

#ifndef __NR_rseq
#error "uapi headers without __NR_rseq"
#endif

/* The original (4.18) ABI: 32 bytes, accepted by every kernel with rseq.
 * Our own name so that it cannot clash with <linux/rseq.h>'s struct rseq. */
struct kr_rseq {
	uint32_t cpu_id_start;
	uint32_t cpu_id;
	uint64_t rseq_cs;
	uint32_t flags;
	uint32_t pad[3];
} __attribute__((aligned(32)));
_Static_assert(sizeof(struct kr_rseq) == 32, "rseq ABI size");
_Static_assert(offsetof(struct kr_rseq, cpu_id) == 4, "cpu_id offset");
_Static_assert(offsetof(struct kr_rseq, rseq_cs) == 8, "rseq_cs offset");

#define READ_ONCE_U32(x) (*(const volatile uint32_t *)&(x))

#define DEFAULT_LOOPS 0		/* calibrate */
#define DEFAULT_SAMPLE_US 2000
#define DEFAULT_SAMPLES 20
#define DEFAULT_WARMUP 1
#define DEFAULT_MIN_SAMPLES 10
#define NSLOTS 8192		/* >= any NR_CPUS a guest is built with */

/* One cache line per CPU, as a real per-cpu counter would be laid out. */
struct slot {
	intptr_t v;
	char pad[64 - sizeof(intptr_t)];
};
static struct slot rseq_slots[NSLOTS] __attribute__((aligned(64)));
static struct slot atomic_slots[NSLOTS] __attribute__((aligned(64)));

static __thread struct kr_rseq own_area;
static struct kr_rseq *rs;	/* the main thread's area; only it measures */
static const char *registration = "none";
static char no_rseq_reason[160];
static uint64_t rseq_incs, rseq_aborts;
static volatile uint64_t sink;
static const char *prog_name = "rseq_bench";

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
	exit(1);
}

/* ------------------------------------------------------------------ */
/* the restartable sequence                                            */

/*
 * *v += 1 if the thread is still on @cpu, as one restartable sequence.
 * Returns 0 when committed, -1 when the kernel aborted it (or the CPU had
 * changed since cpu_id_start was read).  The descriptor (struct rseq_cs:
 * version, flags, start_ip, post_commit_offset, abort_ip) lives in section
 * __rseq_cs; the abort handler is preceded by the signature.
 */
static inline __attribute__((always_inline)) int
rseq_inc(struct kr_rseq *r, intptr_t *v, uint32_t cpu)
{
#if defined(__x86_64__)
	__asm__ __volatile__ goto (
		".pushsection __rseq_cs, \"aw\"\n\t"
		".balign 32\n\t"
		"3:\n\t"
		".long 0, 0\n\t"
		".quad 1f, (2f - 1f), 4f\n\t"
		".popsection\n\t"
		/* start: publish the descriptor */
		"leaq 3b(%%rip), %%rax\n\t"
		"movq %%rax, %[rseq_cs]\n\t"
		"1:\n\t"
		"cmpl %[cpu], %[cur_cpu]\n\t"
		"jnz 4f\n\t"
		/* commit: the final (and only) store */
		"addq $1, %[v]\n\t"
		"2:\n\t"
		".pushsection __rseq_failure, \"ax\"\n\t"
		/* ud1 <sig>(%%rip),%%edi: the signature as an instruction */
		".byte 0x0f, 0xb9, 0x3d\n\t"
		".long " KR_SIG_STR "\n\t"
		"4:\n\t"
		"jmp %l[abort]\n\t"
		".popsection\n\t"
		: /* asm goto: no outputs */
		: [cpu] "r" (cpu),
		  [cur_cpu] "m" (r->cpu_id),
		  [rseq_cs] "m" (r->rseq_cs),
		  [v] "m" (*v)
		: "memory", "cc", "rax"
		: abort);
#else
	__asm__ __volatile__ goto (
		"	.pushsection __rseq_cs, \"aw\"\n"
		"	.balign 32\n"
		"3:\n"
		"	.long 0, 0\n"
		"	.quad 1f, (2f - 1f), 4f\n"
		"	.popsection\n"
		/* start: publish the descriptor */
		"	adrp x15, 3b\n"
		"	add x15, x15, :lo12:3b\n"
		"	str x15, %[rseq_cs]\n"
		"1:\n"
		"	ldr w15, %[cur_cpu]\n"
		"	sub w15, w15, %w[cpu]\n"
		"	cbnz w15, 4f\n"
		"	ldr x15, %[v]\n"
		"	add x15, x15, #1\n"
		/* commit: the final store */
		"	str x15, %[v]\n"
		"2:\n"
		"	b 5f\n"
		"	.inst " KR_SIG_CODE_STR "\n"
		"4:\n"
		"	b %l[abort]\n"
		"5:\n"
		: /* asm goto: no outputs */
		: [cpu] "r" (cpu),
		  [cur_cpu] "Qo" (r->cpu_id),
		  [rseq_cs] "m" (r->rseq_cs),
		  [v] "Qo" (*v)
		: "memory", "x15"
		: abort);
#endif
	return 0;
abort:
	return -1;
}

/* ------------------------------------------------------------------ */
/* the measured loops                                                  */

static void loop_counter_rseq(uint64_t n)
{
	struct kr_rseq *r = rs;
	uint64_t i, aborts = 0;

	for (i = 0; i < n; i++) {
		for (;;) {
			uint32_t cpu = READ_ONCE_U32(r->cpu_id_start);

			if (rseq_inc(r, &rseq_slots[cpu].v, cpu) == 0)
				break;
			aborts++;
		}
	}
	rseq_incs += n;
	rseq_aborts += aborts;
}

static void loop_counter_atomic(uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		int cpu = sched_getcpu();

		__atomic_fetch_add(&atomic_slots[cpu].v, 1, __ATOMIC_RELAXED);
	}
}

static void loop_cpu_id_rseq_area(uint64_t n)
{
	struct kr_rseq *r = rs;
	uint64_t i, s = 0;

	for (i = 0; i < n; i++)
		s += READ_ONCE_U32(r->cpu_id);
	sink = s;
}

static void loop_cpu_id_sched_getcpu(uint64_t n)
{
	uint64_t i, s = 0;

	for (i = 0; i < n; i++)
		s += (uint64_t)sched_getcpu();
	sink = s;
}

static void loop_cpu_id_getcpu_syscall(uint64_t n)
{
	uint64_t i, s = 0;
	unsigned int cpu = 0;

	for (i = 0; i < n; i++) {
		syscall(SYS_getcpu, &cpu, NULL, NULL);
		s += cpu;
	}
	sink = s;
}

struct config {
	const char *suffix;
	void (*run)(uint64_t n);
	bool needs_rseq;
	char name[96];
	bool skip;
	char skip_reason[200];
	uint64_t loops;
	double *samples;
	unsigned long nsamples;
};

static struct config configs[] = {
	{ .suffix = "counter.rseq", .run = loop_counter_rseq, .needs_rseq = true },
	{ .suffix = "counter.atomic", .run = loop_counter_atomic, .needs_rseq = false },
	{ .suffix = "cpu_id.rseq_area", .run = loop_cpu_id_rseq_area, .needs_rseq = true },
	{ .suffix = "cpu_id.sched_getcpu", .run = loop_cpu_id_sched_getcpu, .needs_rseq = false },
	{ .suffix = "cpu_id.getcpu_syscall", .run = loop_cpu_id_getcpu_syscall, .needs_rseq = false },
};
#define NCONFIGS (sizeof(configs) / sizeof(configs[0]))

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double run_sample(struct config *c)
{
	double t0 = now_ns();

	c->run(c->loops);
	return (now_ns() - t0) / (double)c->loops;
}

/* Double the loop count until one sample takes >= @sample_us. */
static void calibrate(struct config *c, double sample_us)
{
	c->loops = 1000;
	for (;;) {
		double t0 = now_ns();

		c->run(c->loops);
		if (now_ns() - t0 >= sample_us * 1e3 ||
		    c->loops >= (UINT64_C(1) << 32))
			break;
		c->loops *= 2;
	}
}

/* ------------------------------------------------------------------ */
/* registration                                                        */

static void setup_rseq(void)
{
	long r;

	/* glibc's area, if glibc registered one for this thread. */
	if (__rseq_size > 0) {
		struct kr_rseq *g = (struct kr_rseq *)
			((char *)__builtin_thread_pointer() + __rseq_offset);

		if ((int32_t)READ_ONCE_U32(g->cpu_id) >= 0) {
			rs = g;
			registration = "glibc";
			return;
		}
	}
	r = syscall(__NR_rseq, &own_area, sizeof(own_area), 0, KR_SIG);
	if (r == 0) {
		rs = &own_area;
		registration = "own";
		return;
	}
	snprintf(no_rseq_reason, sizeof(no_rseq_reason),
		 "rseq(2) registration failed: %s%s", strerror(errno),
		 errno == ENOSYS ? " (kernel without CONFIG_RSEQ)" : "");
}

/* --no-glibc-rseq: run again with glibc's registration turned off (glibc
 * reads GLIBC_TUNABLES only at startup). */
static void reexec_without_glibc_rseq(char **argv)
{
	static const char tun[] = "glibc.pthread.rseq=0";
	const char *old = getenv("GLIBC_TUNABLES");
	char *val;

	if (old && strstr(old, tun))
		return;		/* already the re-executed program */
	if (asprintf(&val, "%s%s%s", old ? old : "", old && *old ? ":" : "",
		     tun) < 0)
		die("out of memory");
	if (setenv("GLIBC_TUNABLES", val, 1) != 0)
		die("setenv GLIBC_TUNABLES: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	execv("/proc/self/exe", argv);
	die("--no-glibc-rseq: execv /proc/self/exe: %s", strerror(errno));
}

/* ------------------------------------------------------------------ */
/* command line and statistics (as in seccomp_notify_bench.c)          */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options]\n"
		"  -l, --loops N          operations per sample, 0 = calibrate to\n"
		"                         --sample-us (default %d)\n"
		"  -u, --sample-us US     calibration target per sample (default %d)\n"
		"  -s, --samples N        measured samples per configuration (default %d)\n"
		"  -w, --warmup N         discarded warm-up samples (default %d)\n"
		"  -t, --target-ci PCT    stop when every 95%% CI of the median is\n"
		"                         within +-PCT%% (0 = off, the default)\n"
		"  -n, --min-samples N    ... but not before N samples (default %d)\n"
		"  -b, --budget-s S       stop S seconds after the first round (0 = none)\n"
		"  -p, --prefix NAME      metric name prefix (default \"rseq\")\n"
		"  -G, --no-glibc-rseq    re-execute with GLIBC_TUNABLES=glibc.pthread.rseq=0\n"
		"  -h, --help             show this help\n"
		"stdout lines: METRIC <prefix>.<name> <x.xxx> ns/op | SKIP <prefix>.<name>\n"
		"              <reason> | ERROR <text>\n",
		prog_name, DEFAULT_LOOPS, DEFAULT_SAMPLE_US, DEFAULT_SAMPLES,
		DEFAULT_WARMUP, DEFAULT_MIN_SAMPLES);
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

/* Same rule as seccomp_notify_bench.c and the harness's stats. */
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
		{ "prefix", required_argument, NULL, 'p' },
		{ "no-glibc-rseq", no_argument, NULL, 'G' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	uint64_t loops = DEFAULT_LOOPS;
	unsigned long samples = DEFAULT_SAMPLES, warmup = DEFAULT_WARMUP;
	unsigned long min_samples = DEFAULT_MIN_SAMPLES, round;
	double target_ci = 0, budget_s = 0, sample_us = DEFAULT_SAMPLE_US;
	double *scratch, t_start;
	const char *prefix = "rseq", *stop_reason = "samples";
	bool no_glibc_rseq = false;
	cpu_set_t allowed, one;
	int cpu = -1, opt, c0, sys_cpu;
	unsigned int i;
	intptr_t sum;

	if (argv[0] && argv[0][0]) {
		const char *slash = strrchr(argv[0], '/');

		prog_name = slash ? slash + 1 : argv[0];
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":l:u:s:w:t:n:b:p:Gh", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'l':
			loops = parse_count("--loops", optarg, 0,
					    UINT64_C(1) << 40);
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
		case 'p':
			if (!*optarg || strpbrk(optarg, " \t\n"))
				bad_usage("--prefix: '%s' is empty or has blanks",
					  optarg);
			prefix = optarg;
			break;
		case 'G':
			no_glibc_rseq = true;
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
	if (no_glibc_rseq)
		reexec_without_glibc_rseq(argv);

	/* Pin to the first allowed CPU: no migrations while measuring. */
	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		die("sched_getaffinity: %s", strerror(errno));
	for (c0 = 0; c0 < CPU_SETSIZE; c0++)
		if (CPU_ISSET(c0, &allowed)) {
			cpu = c0;
			break;
		}
	if (cpu < 0 || cpu >= NSLOTS)
		die("no usable CPU in the affinity mask (first %d)", cpu);
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0)
		die("sched_setaffinity(%d): %s", cpu, strerror(errno));

	setup_rseq();
	if (syscall(SYS_getcpu, &sys_cpu, NULL, NULL) != 0)
		die("getcpu: %s", strerror(errno));
	fprintf(stderr, "# %s: prefix=%s loops=%llu%s sample-us=%g samples=%lu "
		"warmup=%lu target-ci=%g%% min-samples=%lu budget=%gs cpu=%d\n",
		prog_name, prefix, (unsigned long long)loops,
		loops ? "" : " (calibrate)", sample_us, samples, warmup,
		target_ci, min_samples, budget_s, cpu);
	fprintf(stderr, "# rseq registration: %s", registration);
	if (rs == &own_area)
		fprintf(stderr, " (own area %p, len %zu, sig 0x%08x)", (void *)rs,
			sizeof(own_area), (unsigned int)KR_SIG);
	else if (rs)
		fprintf(stderr, " (__rseq_offset %td, __rseq_size %u)",
			__rseq_offset, __rseq_size);
	else
		fprintf(stderr, " (%s)", no_rseq_reason);
	fprintf(stderr, "; GLIBC_TUNABLES=%s; sched_getcpu path: %s\n",
		getenv("GLIBC_TUNABLES") ? getenv("GLIBC_TUNABLES") : "(unset)",
		strcmp(registration, "glibc") == 0 ? "glibc's rseq area" :
#if defined(__x86_64__)
		"vDSO getcpu"
#else
		"getcpu syscall (no vDSO getcpu on arm64)"
#endif
		);
	if (rs && (int)READ_ONCE_U32(rs->cpu_id) != sys_cpu)
		die("rseq area says cpu %d, getcpu says %d (registration %s)",
		    (int)READ_ONCE_U32(rs->cpu_id), sys_cpu, registration);
	if (sched_getcpu() != sys_cpu)
		die("sched_getcpu says %d, getcpu says %d", sched_getcpu(),
		    sys_cpu);

	for (i = 0; i < NCONFIGS; i++) {
		struct config *c = &configs[i];

		snprintf(c->name, sizeof(c->name), "%s.%s", prefix, c->suffix);
		if (c->needs_rseq && !rs) {
			c->skip = true;
			snprintf(c->skip_reason, sizeof(c->skip_reason), "%s",
				 no_rseq_reason);
			printf("SKIP %s %s\n", c->name, c->skip_reason);
			continue;
		}
		c->samples = calloc(samples, sizeof(double));
		if (!c->samples)
			die("out of memory");
		c->loops = loops;
		if (!loops)
			calibrate(c, sample_us);
		fprintf(stderr, "# %s: %llu ops per sample\n", c->name,
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
			double ns;

			if (c->skip)
				continue;
			ns = run_sample(c);
			if (round < warmup) {
				fprintf(stderr, "# warmup %s %.3f ns/op\n",
					c->name, ns);
				continue;
			}
			c->samples[c->nsamples++] = ns;
			printf("METRIC %s %.3f ns/op\n", c->name, ns);
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

	/* Every committed increment must be in exactly one slot. */
	for (sum = 0, c0 = 0; c0 < NSLOTS; c0++)
		sum += rseq_slots[c0].v;
	if (rs) {
		fprintf(stderr, "# rseq counter: %llu increments, %llu aborts, "
			"slots sum %lld\n", (unsigned long long)rseq_incs,
			(unsigned long long)rseq_aborts, (long long)sum);
		if ((uint64_t)sum != rseq_incs)
			die("rseq counter lost increments: slots sum %lld, "
			    "expected %llu", (long long)sum,
			    (unsigned long long)rseq_incs);
	}

	for (i = 0; i < NCONFIGS; i++) {
		struct config *c = &configs[i];

		if (c->skip || !c->nsamples)
			continue;
		qsort(c->samples, c->nsamples, sizeof(double), cmp_double);
		fprintf(stderr, "# summary %s: median %.3f min %.3f max %.3f "
			"ns/op (n=%lu)\n", c->name,
			median_of_sorted(c->samples, c->nsamples),
			c->samples[0], c->samples[c->nsamples - 1],
			c->nsamples);
		free(c->samples);
	}
	return 0;
}
