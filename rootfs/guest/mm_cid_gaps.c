// SPDX-License-Identifier: GPL-2.0
/*
 * mm_cid_gaps - what a busy user thread loses to task_mm_cid_work.
 *
 * Why: since 6.4 the scheduler tick of a task with an mm queues
 * task_mm_cid_work (at most every 100 ms per mm, MM_CID_SCAN_DELAY), which
 * runs on that task's next return to user space and walks every *possible*
 * CPU to compact the mm's concurrency ids.  Its cost grows with the number
 * of possible CPUs, not online ones, and the busy task pays it.  The
 * series "sched: improve task_mm_cid_work impact on isolated systems"
 * (Gabriele Monaco, <20241202140735.56368-1-gmonaco@redhat.com>) scans only
 * the CPUs of the mm's cid mask and moves the work out of the
 * return-to-user path.  Under TCG with ~255 possible CPUs the work is
 * expected to show as a 10 Hz train of gaps of ~190 us; with 2 or 64
 * possible CPUs it is lost in the tick (~25 us) and host noise.
 *
 * What: one thread, pinned to CPU 1 (or, without CPU 1, the last allowed
 * CPU), reads CLOCK_MONOTONIC in a tight loop for --duration-s seconds
 * (osnoise-style) and records every gap >= --min-gap-us between consecutive
 * reads, with the time it began.  The buffer for them is allocated and
 * touched before the loop, so recording never faults.
 *
 * Reported (one run = one sample of each; the harness boots several times):
 *   mm_cid.cpus.possible, .online    from /sys/devices/system/cpu/{possible,
 *                                    online}, unit cpus
 *   mm_cid.gap.p50, .p99, .max       all recorded gaps, us (nearest rank)
 *   mm_cid.gap.rate                  recorded gaps per second, 1/s
 *   mm_cid.big.rate                  gaps >= --big-gap-us per second, 1/s
 *   mm_cid.big.count                 their number, gaps
 *   mm_cid.periodic.count            big gaps with a partner ~100 ms away
 *   mm_cid.periodic.pct              that, in % of the big gaps
 *   mm_cid.periodic.size_p50         median size of those gaps, us
 *   mm_cid.periodic.spacing_p50      median distance to their partner, ms
 *   mm_cid.control.count             big gaps with a partner ~150 ms away
 *   mm_cid.periodic.excess           periodic.count - control.count: the
 *                                    train net of chance partners
 *   mm_cid.periodic.chance_pct       Poisson chance that a big gap has a
 *                                    partner at either lag: near 100, the
 *                                    periodic test cannot see a train
 *   mm_cid.gap_big                   every big gap, us: one METRIC line
 *                                    each (at most --max-raw), so the
 *                                    harness can pool them across boots
 *   mm_cid.work.us                   every run of task_mm_cid_work on the
 *                                    busy thread, entry to return, us (one
 *                                    line each, at most --max-raw)
 *   mm_cid.work.rate                 those runs per second, 1/s
 *   mm_cid.work.busy_pct             their summed time in % of the run
 *   mm_cid.big.work_pct              % of the big gaps that hold a run of
 *                                    the work: how much of the gap scan is
 *                                    the work and how much the host
 * A metric without data (no gap at all, no periodic gap) is a SKIP.
 *
 * The work itself is timed with a kprobe and a kretprobe on --probe
 * (default task_mm_cid_work) opened through perf_event_open's kprobe PMU
 * for this thread only, timestamps on CLOCK_MONOTONIC (so a run can be
 * placed inside a gap).  kernel/sched/ is built without the function
 * tracer's hooks, so ftrace cannot see the function; a kprobe can.  Each
 * run is charged the probes' own cost too (a trap at entry and return):
 * the same on both sides of a comparison.  Needs CONFIG_PERF_EVENTS and
 * CONFIG_KPROBE_EVENTS; without them (or without the function) the work
 * metrics are SKIPs that say why, and the gap scan runs as before.
 *
 * The periodic component, and why this way.  The maximum alone cannot tell
 * the work from host preemption, which adds random big gaps.  Folding the
 * timestamps modulo 100 ms does not work either: the work runs at the
 * first tick after the 100 ms delay expired, so its period is 100 ms plus
 * up to a tick and drifts through any fixed phase within a few seconds.
 * So the test is local: a big gap is "periodic" when another big gap
 * began within --period-ms +- --tolerance-ms (default 100 +- 15 ms) before
 * or after it (any big gap, not only the next one, since random gaps
 * interleave with the train).  Its spacing is that partner's distance
 * closest to the period.  Random gaps also find partners by chance; the
 * same count at the control lag --control-ms (default 150 ms, between the
 * train's 100 and 200 ms multiples) measures that chance: a 10 Hz train
 * gives periodic >> control, random gaps give periodic ~ control.  The
 * Poisson expectation for the chance fraction, 1 - exp(-rate * 4 * tol),
 * and a histogram of the spacing of consecutive big gaps go to stderr.
 *
 * Output on stdout, line buffered: METRIC name value unit / SKIP name
 * reason / ERROR text (then exit 1).  Everything else goes to stderr.
 * Exit status: 0 success, 1 ERROR, 2 bad command line.
 *
 * Build: gcc -static -O2 -Wall -Wextra -Werror -o mm_cid_gaps mm_cid_gaps.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <linux/perf_event.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DEFAULT_DURATION_S 10
#define DEFAULT_MIN_GAP_US 20
#define DEFAULT_BIG_GAP_US 150
#define DEFAULT_PERIOD_MS 100
#define DEFAULT_TOLERANCE_MS 15
#define DEFAULT_CONTROL_MS 150
#define DEFAULT_MAX_RAW 5000
#define DEFAULT_PROBE "task_mm_cid_work"
/* Ring of each probe: 16 data pages hold ~2,700 samples of 24 bytes, over
 * 25 times what 10 s of a 10 Hz work writes. */
#define PROBE_PAGES 16
/* A gap >= 1 us needs a read; so at most 1e6 per second; we record gaps
 * >= min-gap-us, so at most 1e6 / min-gap-us per second. */
#define MAX_ENTRIES (UINT64_C(1) << 23)

static const char *prog_name = "mm_cid_gaps";

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

static void usage(FILE *f)
{
	fprintf(f,
		"usage: %s [options]\n"
		"  -d, --duration-s S     measuring time (default %d)\n"
		"  -g, --min-gap-us US    record gaps >= US (default %d)\n"
		"  -B, --big-gap-us US    big gaps, for the periodic test (default %d)\n"
		"  -P, --period-ms MS     expected period (default %d)\n"
		"  -T, --tolerance-ms MS  +- window around it (default %d)\n"
		"  -C, --control-ms MS    control lag for chance partners (default %d)\n"
		"  -c, --cpu N            CPU to run on (default 1, else the last allowed)\n"
		"  -r, --max-raw N        at most N mm_cid.gap_big and mm_cid.work.us\n"
		"                         lines each (default %d)\n"
		"  -p, --probe FUNC       time runs of FUNC (default %s; \"\" for none)\n"
		"  -h, --help             show this help\n",
		prog_name, DEFAULT_DURATION_S, DEFAULT_MIN_GAP_US,
		DEFAULT_BIG_GAP_US, DEFAULT_PERIOD_MS, DEFAULT_TOLERANCE_MS,
		DEFAULT_CONTROL_MS, DEFAULT_MAX_RAW, DEFAULT_PROBE);
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

/* Number of CPUs in a cpulist file ("0-3,8"), -1 if unreadable. */
static int cpulist_count(const char *path, char *text, size_t len)
{
	FILE *f = fopen(path, "re");
	int n = 0;
	char *p;

	text[0] = '\0';
	if (!f)
		return -1;
	if (!fgets(text, (int)len, f)) {
		fclose(f);
		return -1;
	}
	fclose(f);
	text[strcspn(text, "\n")] = '\0';
	for (p = text; *p;) {
		char *end;
		long a = strtol(p, &end, 10), b = a;

		if (end == p)
			return -1;
		if (*end == '-') {
			p = end + 1;
			b = strtol(p, &end, 10);
			if (end == p || b < a)
				return -1;
		}
		n += (int)(b - a + 1);
		p = end;
		if (*p == ',')
			p++;
		else if (*p)
			return -1;
	}
	return n;
}

static inline uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static uint32_t pct_u32(const uint32_t *x, uint64_t n, double p)
{
	uint64_t r = (uint64_t)ceil(p / 100.0 * (double)n);

	return x[r ? r - 1 : 0];
}

static double median_u64(uint64_t *x, uint64_t n)
{
	qsort(x, n, sizeof(*x), cmp_u64);
	return n % 2 ? (double)x[n / 2] :
		((double)x[n / 2 - 1] + (double)x[n / 2]) / 2;
}

/*
 * For each of the @n sorted start times @t, the distance to the partner
 * within [lag - tol, lag + tol] (before or after) closest to @lag, or 0
 * when there is none.  Returns the number with a partner.
 */
static uint64_t partners(const uint64_t *t, uint64_t n, uint64_t lag,
			 uint64_t tol, uint64_t *dist)
{
	uint64_t i, j, found = 0;

	for (i = 0; i < n; i++) {
		uint64_t best = 0, best_err = UINT64_MAX;

		/* later partners */
		for (j = i + 1; j < n && t[j] - t[i] <= lag + tol; j++) {
			uint64_t d = t[j] - t[i];
			uint64_t e = d > lag ? d - lag : lag - d;

			if (d >= lag - tol && e < best_err) {
				best = d;
				best_err = e;
			}
		}
		/* earlier partners */
		for (j = i; j-- > 0 && t[i] - t[j] <= lag + tol;) {
			uint64_t d = t[i] - t[j];
			uint64_t e = d > lag ? d - lag : lag - d;

			if (d >= lag - tol && e < best_err) {
				best = d;
				best_err = e;
			}
		}
		dist[i] = best;
		found += best != 0;
	}
	return found;
}

/* One kprobe or kretprobe event of this thread, with its sample ring. */
struct probe {
	int fd;
	unsigned char *ring;
	size_t len;
};

/* First line of @path into @buf; false when unreadable. */
static bool read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, (int)len, f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/*
 * Opens a probe on @func for the calling thread: an entry probe, or with
 * @ret a return probe.  Returns false with the reason in @why.
 */
static bool probe_open(struct probe *p, const char *func, bool ret,
		       char *why, size_t whylen)
{
	static const char pmu[] = "/sys/bus/event_source/devices/kprobe";
	struct perf_event_attr a;
	char line[64];
	unsigned retbit = 0;
	long page = sysconf(_SC_PAGESIZE);
	int type;

	if (!read_line("/sys/bus/event_source/devices/kprobe/type", line,
		       sizeof(line))) {
		snprintf(why, whylen, "no kprobe PMU (%s/type: %s; needs "
			 "CONFIG_PERF_EVENTS and CONFIG_KPROBE_EVENTS)", pmu,
			 strerror(errno));
		return false;
	}
	type = atoi(line);
	if (ret) {
		if (!read_line("/sys/bus/event_source/devices/kprobe/format/retprobe",
			       line, sizeof(line)) ||
		    sscanf(line, "config:%u", &retbit) != 1 || retbit > 63) {
			snprintf(why, whylen, "unreadable %s/format/retprobe",
				 pmu);
			return false;
		}
	}
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = (uint32_t)type;
	a.config = ret ? UINT64_C(1) << retbit : 0;
	a.config1 = (uint64_t)(uintptr_t)func; /* kprobe_func */
	a.config2 = 0;			       /* probe_offset */
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.disabled = 1;
	p->fd = (int)syscall(__NR_perf_event_open, &a, 0, -1, -1,
			     PERF_FLAG_FD_CLOEXEC);
	if (p->fd < 0) {
		snprintf(why, whylen, "perf_event_open(%s %s): %s",
			 ret ? "kretprobe" : "kprobe", func, strerror(errno));
		return false;
	}
	p->len = (size_t)page * (1 + PROBE_PAGES);
	p->ring = mmap(NULL, p->len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       p->fd, 0);
	if (p->ring == MAP_FAILED) {
		snprintf(why, whylen, "mmap of the %s ring: %s",
			 ret ? "kretprobe" : "kprobe", strerror(errno));
		close(p->fd);
		return false;
	}
	return true;
}

/*
 * The sample times in @p's ring, in order, into @t (at most @cap); the
 * samples the kernel could not write (ring full) add to @lost.
 */
static uint64_t probe_times(struct probe *p, uint64_t *t, uint64_t cap,
			    uint64_t *lost)
{
	struct perf_event_mmap_page *m = (void *)p->ring;
	uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = m->data_tail, size = m->data_size, n = 0;
	unsigned char *data = p->ring + m->data_offset;

	while (tail < head) {
		unsigned char rec[64];
		struct perf_event_header h;
		uint64_t i;

		for (i = 0; i < sizeof(h); i++)
			((unsigned char *)&h)[i] = data[(tail + i) % size];
		if (h.size < sizeof(h))
			break;
		for (i = 0; i < h.size && i < sizeof(rec); i++)
			rec[i] = data[(tail + i) % size];
		if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof(h) + 16) {
			uint64_t time;

			/* u32 pid, tid; u64 time */
			memcpy(&time, rec + sizeof(h) + 8, sizeof(time));
			if (n < cap)
				t[n++] = time;
			else
				(*lost)++;
		} else if (h.type == PERF_RECORD_LOST &&
			   h.size >= sizeof(h) + 16) {
			uint64_t l;

			memcpy(&l, rec + sizeof(h) + 8, sizeof(l));
			*lost += l;
		}
		tail += h.size;
	}
	return n;
}

static void work_skip(const char *why)
{
	printf("SKIP mm_cid.work.us %s\n", why);
	printf("SKIP mm_cid.work.rate %s\n", why);
	printf("SKIP mm_cid.work.busy_pct %s\n", why);
	printf("SKIP mm_cid.big.work_pct %s\n", why);
}

/*
 * The runs of the probed function between @t0 and @t1 (CLOCK_MONOTONIC
 * ns): each entry paired with the first return after it, before the next
 * entry (the work does not nest; an entry without a return was cut off by
 * the end of the run).  Then the share of the @n gaps (@start relative to
 * @t0, sizes in @gap) of at least @big_ns that overlap a run.
 */
static void work_report(struct probe *entry, struct probe *ret,
			const char *fn, uint64_t t0, uint64_t t1,
			const uint64_t *start, const uint32_t *gap, uint64_t n,
			uint64_t big_ns, uint64_t max_raw)
{
	/* As many samples (24 bytes each) as a ring of these pages holds. */
	uint64_t cap = entry->len / 24 + 1, lost = 0, ne, nr, i, j = 0;
	uint64_t *te = calloc(cap, sizeof(*te)), *tr = calloc(cap, sizeof(*tr));
	uint64_t *dur, *sorted, runs = 0, unpaired = 0, printed = 0;
	uint64_t nbig = 0, inbig = 0, k = 0;
	double total = 0, secs = (double)(t1 - t0) / 1e9;

	dur = calloc(cap, sizeof(*dur));
	sorted = calloc(cap, sizeof(*sorted));
	if (!te || !tr || !dur || !sorted)
		die("out of memory");
	ne = probe_times(entry, te, cap, &lost);
	nr = probe_times(ret, tr, cap, &lost);
	if (lost)
		die("%llu probe samples lost (ring full): raise PROBE_PAGES",
		    (unsigned long long)lost);
	for (i = 0; i < ne; i++) {
		while (j < nr && tr[j] < te[i])
			j++;
		if (j == nr || (i + 1 < ne && te[i + 1] < tr[j])) {
			unpaired++;
			continue;
		}
		te[runs] = te[i];
		dur[runs++] = tr[j++] - te[i];
	}
	fprintf(stderr, "# probe %s: %llu entries, %llu returns, %llu runs, "
		"%llu without a return\n", fn, (unsigned long long)ne,
		(unsigned long long)nr, (unsigned long long)runs,
		(unsigned long long)unpaired);
	for (i = 0; i < runs; i++)
		total += (double)dur[i];
	printf("METRIC mm_cid.work.rate %.3f 1/s\n", (double)runs / secs);
	printf("METRIC mm_cid.work.busy_pct %.4f %%\n",
	       100.0 * total / ((double)(t1 - t0)));
	if (!runs)
		printf("SKIP mm_cid.work.us no run of %s in %.0f s\n", fn, secs);
	for (i = 0; i < runs && printed < max_raw; i++, printed++)
		printf("METRIC mm_cid.work.us %.3f us\n", (double)dur[i] / 1e3);
	if (runs) {
		double med;

		memcpy(sorted, dur, runs * sizeof(*sorted));
		med = median_u64(sorted, runs); /* sorts them */
		fprintf(stderr, "# %s: median %.3f us, max %.3f us, %.4f%% of "
			"the run\n", fn, med / 1e3,
			(double)sorted[runs - 1] / 1e3,
			100.0 * total / ((double)(t1 - t0)));
	}
	/* Runs and big gaps, both in time order: a gap holds a run when
	 * they overlap. */
	for (i = 0; i < n; i++) {
		uint64_t g0 = t0 + start[i], g1 = g0 + gap[i];

		if (gap[i] < big_ns)
			continue;
		nbig++;
		while (k < runs && te[k] + dur[k] <= g0)
			k++;
		if (k < runs && te[k] < g1)
			inbig++;
	}
	if (nbig)
		printf("METRIC mm_cid.big.work_pct %.1f %%\n",
		       100.0 * (double)inbig / (double)nbig);
	else
		printf("SKIP mm_cid.big.work_pct no gaps >= %llu us\n",
		       (unsigned long long)(big_ns / 1000));
	free(te);
	free(tr);
	free(dur);
	free(sorted);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "duration-s", required_argument, NULL, 'd' },
		{ "min-gap-us", required_argument, NULL, 'g' },
		{ "big-gap-us", required_argument, NULL, 'B' },
		{ "period-ms", required_argument, NULL, 'P' },
		{ "tolerance-ms", required_argument, NULL, 'T' },
		{ "control-ms", required_argument, NULL, 'C' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "max-raw", required_argument, NULL, 'r' },
		{ "probe", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	uint64_t duration_s = DEFAULT_DURATION_S, min_gap_us = DEFAULT_MIN_GAP_US;
	uint64_t big_gap_us = DEFAULT_BIG_GAP_US, period_ms = DEFAULT_PERIOD_MS;
	uint64_t tol_ms = DEFAULT_TOLERANCE_MS, control_ms = DEFAULT_CONTROL_MS;
	uint64_t max_raw = DEFAULT_MAX_RAW, cap, n = 0, dropped = 0, reads = 0;
	uint64_t t0, t_end, prev, now, min_ns, i, nbig = 0, nper, nctl;
	uint64_t *start, *bt, *dist, *tmp, hist[31] = { 0 };
	uint32_t *gap, *sorted;
	char possible_s[256], online_s[256];
	int possible, online, cpu = -1, want_cpu = -1, opt, c;
	cpu_set_t allowed, one;
	double secs, big_rate;
	const char *probe_fn = DEFAULT_PROBE;
	struct probe entry = { -1, NULL, 0 }, ret = { -1, NULL, 0 };
	char probe_why[512] = "";
	bool probing = false;

	if (argv[0] && argv[0][0]) {
		const char *slash = strrchr(argv[0], '/');

		prog_name = slash ? slash + 1 : argv[0];
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":d:g:B:P:T:C:c:r:p:h", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'd':
			duration_s = parse_count("--duration-s", optarg, 1, 600);
			break;
		case 'g':
			min_gap_us = parse_count("--min-gap-us", optarg, 1,
						 1000000);
			break;
		case 'B':
			big_gap_us = parse_count("--big-gap-us", optarg, 1,
						 1000000);
			break;
		case 'P':
			period_ms = parse_count("--period-ms", optarg, 1, 10000);
			break;
		case 'T':
			tol_ms = parse_count("--tolerance-ms", optarg, 0, 10000);
			break;
		case 'C':
			control_ms = parse_count("--control-ms", optarg, 1, 10000);
			break;
		case 'c':
			want_cpu = (int)parse_count("--cpu", optarg, 0,
						    CPU_SETSIZE - 1);
			break;
		case 'r':
			max_raw = parse_count("--max-raw", optarg, 0, 10000000);
			break;
		case 'p':
			probe_fn = optarg;
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
	if (tol_ms >= period_ms || tol_ms >= control_ms)
		bad_usage("--tolerance-ms must be below --period-ms and --control-ms");
	if (big_gap_us < min_gap_us)
		bad_usage("--big-gap-us must be >= --min-gap-us");

	possible = cpulist_count("/sys/devices/system/cpu/possible",
				 possible_s, sizeof(possible_s));
	online = cpulist_count("/sys/devices/system/cpu/online", online_s,
			       sizeof(online_s));
	fprintf(stderr, "# cpus: possible %s (%d), online %s (%d)\n",
		possible_s, possible, online_s, online);
	if (possible > 0)
		printf("METRIC mm_cid.cpus.possible %d cpus\n", possible);
	else
		printf("SKIP mm_cid.cpus.possible cannot read /sys/devices/system/cpu/possible\n");
	if (online > 0)
		printf("METRIC mm_cid.cpus.online %d cpus\n", online);
	else
		printf("SKIP mm_cid.cpus.online cannot read /sys/devices/system/cpu/online\n");

	if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
		die("sched_getaffinity: %s", strerror(errno));
	if (want_cpu >= 0) {
		if (!CPU_ISSET(want_cpu, &allowed))
			die("--cpu %d is not in the allowed CPUs", want_cpu);
		cpu = want_cpu;
	} else if (CPU_ISSET(1, &allowed)) {
		cpu = 1;
	} else {
		for (c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &allowed))
				cpu = c;
	}
	if (cpu < 0)
		die("no allowed CPU");
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	if (sched_setaffinity(0, sizeof(one), &one) != 0)
		die("sched_setaffinity(%d): %s", cpu, strerror(errno));

	cap = duration_s * 1000000 / min_gap_us + 1024;
	if (cap > MAX_ENTRIES)
		cap = MAX_ENTRIES;
	start = malloc(cap * sizeof(*start));
	gap = malloc(cap * sizeof(*gap));
	if (!start || !gap)
		die("out of memory for %llu gaps", (unsigned long long)cap);
	/* Fault the buffers in now, not while measuring. */
	memset(start, 0, cap * sizeof(*start));
	memset(gap, 0, cap * sizeof(*gap));
	fprintf(stderr, "# %s: cpu=%d duration=%llus min-gap=%lluus "
		"big-gap=%lluus period=%llu+-%llums control=%llums "
		"capacity=%llu gaps\n", prog_name, cpu,
		(unsigned long long)duration_s, (unsigned long long)min_gap_us,
		(unsigned long long)big_gap_us, (unsigned long long)period_ms,
		(unsigned long long)tol_ms, (unsigned long long)control_ms,
		(unsigned long long)cap);

	if (!*probe_fn)
		snprintf(probe_why, sizeof(probe_why), "--probe \"\" given");
	else if (probe_open(&entry, probe_fn, false, probe_why,
			    sizeof(probe_why))) {
		if (probe_open(&ret, probe_fn, true, probe_why,
			       sizeof(probe_why)))
			probing = true;
		else
			close(entry.fd);
	}
	if (probing && (ioctl(entry.fd, PERF_EVENT_IOC_ENABLE, 0) ||
			ioctl(ret.fd, PERF_EVENT_IOC_ENABLE, 0)))
		die("enabling the probes on %s: %s", probe_fn, strerror(errno));
	fprintf(stderr, "# probe: %s\n", probing ? probe_fn : probe_why);

	min_ns = min_gap_us * 1000;
	t0 = prev = now_ns();
	t_end = t0 + duration_s * 1000000000u;
	for (;;) {
		now = now_ns();
		reads++;
		if (now - prev >= min_ns) {
			if (n < cap) {
				start[n] = prev - t0;
				gap[n] = (uint32_t)((now - prev) > UINT32_MAX ?
						    UINT32_MAX : now - prev);
				n++;
			} else {
				dropped++;
			}
		}
		prev = now;
		if (now >= t_end)
			break;
	}
	if (probing) {
		ioctl(entry.fd, PERF_EVENT_IOC_DISABLE, 0);
		ioctl(ret.fd, PERF_EVENT_IOC_DISABLE, 0);
	}
	secs = (double)(now - t0) / 1e9;
	fprintf(stderr, "# %llu clock reads in %.3f s (%.1f ns per read), "
		"%llu gaps >= %llu us recorded, %llu dropped (buffer full)\n",
		(unsigned long long)reads, secs, secs * 1e9 / (double)reads,
		(unsigned long long)n, (unsigned long long)min_gap_us,
		(unsigned long long)dropped);
	if (sched_getcpu() != cpu)
		die("ran on cpu %d, not the pinned %d", sched_getcpu(), cpu);

	/* All gaps. */
	sorted = calloc(n ? n : 1, sizeof(*sorted));
	bt = calloc(n ? n : 1, sizeof(*bt));
	dist = calloc(n ? n : 1, sizeof(*dist));
	tmp = calloc(n ? n : 1, sizeof(*tmp));
	if (!sorted || !bt || !dist || !tmp)
		die("out of memory");
	memcpy(sorted, gap, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_u32);
	printf("METRIC mm_cid.gap.rate %.3f 1/s\n", (double)n / secs);
	if (n) {
		printf("METRIC mm_cid.gap.p50 %.3f us\n",
		       pct_u32(sorted, n, 50) / 1e3);
		printf("METRIC mm_cid.gap.p99 %.3f us\n",
		       pct_u32(sorted, n, 99) / 1e3);
		printf("METRIC mm_cid.gap.max %.3f us\n", sorted[n - 1] / 1e3);
	} else {
		printf("SKIP mm_cid.gap.p50 no gaps >= %llu us\n",
		       (unsigned long long)min_gap_us);
		printf("SKIP mm_cid.gap.p99 no gaps >= %llu us\n",
		       (unsigned long long)min_gap_us);
		printf("SKIP mm_cid.gap.max no gaps >= %llu us\n",
		       (unsigned long long)min_gap_us);
	}

	/* Big gaps: start times in order (they were recorded in order). */
	for (i = 0; i < n; i++)
		if (gap[i] >= big_gap_us * 1000)
			bt[nbig++] = start[i];
	big_rate = (double)nbig / secs;
	printf("METRIC mm_cid.big.rate %.3f 1/s\n", big_rate);
	printf("METRIC mm_cid.big.count %llu gaps\n", (unsigned long long)nbig);

	nctl = partners(bt, nbig, control_ms * 1000000, tol_ms * 1000000, dist);
	nper = partners(bt, nbig, period_ms * 1000000, tol_ms * 1000000, dist);
	printf("METRIC mm_cid.periodic.count %llu gaps\n",
	       (unsigned long long)nper);
	printf("METRIC mm_cid.control.count %llu gaps\n",
	       (unsigned long long)nctl);
	/* The train net of chance, and how much chance leaves to see: at
	 * high big-gap rates every gap finds a partner at either lag and
	 * the test has no power (chance_pct near 100). */
	printf("METRIC mm_cid.periodic.excess %lld gaps\n",
	       (long long)nper - (long long)nctl);
	printf("METRIC mm_cid.periodic.chance_pct %.1f %%\n",
	       100.0 * (1.0 - exp(-big_rate * 4.0 * (double)tol_ms / 1e3)));
	if (nbig)
		printf("METRIC mm_cid.periodic.pct %.1f %%\n",
		       100.0 * (double)nper / (double)nbig);
	else
		printf("SKIP mm_cid.periodic.pct no gaps >= %llu us\n",
		       (unsigned long long)big_gap_us);
	if (nper) {
		uint64_t k = 0, j = 0;

		/* sizes of the periodic gaps (walk the big ones in order) */
		for (i = 0; i < n; i++) {
			if (gap[i] < big_gap_us * 1000)
				continue;
			if (dist[j++])
				tmp[k++] = gap[i];
		}
		printf("METRIC mm_cid.periodic.size_p50 %.3f us\n",
		       median_u64(tmp, k) / 1e3);
		for (i = 0, k = 0; i < nbig; i++)
			if (dist[i])
				tmp[k++] = dist[i];
		printf("METRIC mm_cid.periodic.spacing_p50 %.3f ms\n",
		       median_u64(tmp, k) / 1e6);
	} else {
		printf("SKIP mm_cid.periodic.size_p50 no big gap has a partner "
		       "%llu+-%llu ms away\n", (unsigned long long)period_ms,
		       (unsigned long long)tol_ms);
		printf("SKIP mm_cid.periodic.spacing_p50 no big gap has a partner "
		       "%llu+-%llu ms away\n", (unsigned long long)period_ms,
		       (unsigned long long)tol_ms);
	}
	fprintf(stderr, "# big gaps >= %llu us: %llu (%.2f/s); with a partner "
		"at %llu+-%llu ms: %llu, at the control lag %llu+-%llu ms: %llu; "
		"chance expectation for either: %.0f%%\n",
		(unsigned long long)big_gap_us, (unsigned long long)nbig,
		big_rate, (unsigned long long)period_ms,
		(unsigned long long)tol_ms, (unsigned long long)nper,
		(unsigned long long)control_ms, (unsigned long long)tol_ms,
		(unsigned long long)nctl,
		100.0 * (1.0 - exp(-big_rate * 4.0 * (double)tol_ms / 1e3)));

	/* Spacing of consecutive big gaps, 10 ms bins (last: >= 300 ms). */
	for (i = 1; i < nbig; i++) {
		uint64_t b = (bt[i] - bt[i - 1]) / 10000000;

		hist[b < 30 ? b : 30]++;
	}
	if (nbig > 1) {
		fprintf(stderr, "# consecutive big-gap spacing, 10 ms bins:");
		for (i = 0; i < 31; i++)
			if (hist[i])
				fprintf(stderr, " %s%llu:%llu", i == 30 ? ">=" : "",
					(unsigned long long)i * 10,
					(unsigned long long)hist[i]);
		fputc('\n', stderr);
	}

	if (probing)
		work_report(&entry, &ret, probe_fn, t0, now, start, gap, n,
			    big_gap_us * 1000, max_raw);
	else
		work_skip(probe_why);

	/* Raw big gaps for pooling. */
	if (!nbig)
		printf("SKIP mm_cid.gap_big no gaps >= %llu us\n",
		       (unsigned long long)big_gap_us);
	for (i = 0, c = 0; i < n && (uint64_t)c < max_raw; i++)
		if (gap[i] >= big_gap_us * 1000) {
			printf("METRIC mm_cid.gap_big %.3f us\n", gap[i] / 1e3);
			c++;
		}
	if (nbig > max_raw)
		fprintf(stderr, "# %llu big gaps not printed (--max-raw %llu)\n",
			(unsigned long long)(nbig - max_raw),
			(unsigned long long)max_raw);
	if (n)
		fprintf(stderr, "# gaps: p50 %.1f p99 %.1f max %.1f us\n",
			pct_u32(sorted, n, 50) / 1e3,
			pct_u32(sorted, n, 99) / 1e3, sorted[n - 1] / 1e3);
	return 0;
}
