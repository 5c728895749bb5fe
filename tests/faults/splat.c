/*
 * Fault test "splat": asks a kernel carrying tests/faults/splat/ (the
 * PR_KMATRIX_SPLAT prctl) to print a non-fatal "BUG: sleeping function
 * called from invalid context" report, so the harness can check that a
 * kernel splat is found on the console and pinned on the test running at
 * the time, while the kernel and the remaining tests go on normally.
 *
 * Exit status: 0 if prctl() returned 0 (the splat was printed), 1 otherwise
 * (a kernel without the patch rejects the option with EINVAL).
 *
 * With --dead-task (fault test "deadtask"), arg2 = 1: the kernel oopses in
 * this task while it is marked exiting, prints "Fixing recursive fault but
 * reboot is needed!", and the task never returns nor exits.
 *
 * With --hung-task (fault test "hungtask"), arg2 = 2: the task sleeps in
 * the kernel uninterruptibly for good. The hung task detector's timeout is
 * first set to 2 s (/proc/sys/kernel/hung_task_timeout_secs, which also
 * wakes the detector), so that it reports in seconds rather than minutes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#define PR_KMATRIX_SPLAT 0x4b4d4254

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	unsigned long what = 0;
	int ret;
	int err;

	if (strcmp(mode, "--dead-task") == 0) {
		what = 1;
		printf("oopsing while exiting: this task will not come back\n");
	} else if (strcmp(mode, "--hung-task") == 0) {
		FILE *f = fopen("/proc/sys/kernel/hung_task_timeout_secs", "w");

		if (!f || fprintf(f, "2\n") < 0 || fclose(f) != 0) {
			printf("ERROR cannot set kernel.hung_task_timeout_secs: %s\n",
			       strerror(errno));
			return 1;
		}
		what = 2;
		printf("sleeping in the kernel for good (state D)\n");
	}
	fflush(stdout);
	errno = 0;
	/* The variadic arguments are read as unsigned long by the kernel ABI. */
	ret = prctl(PR_KMATRIX_SPLAT, what, 0UL, 0UL, 0UL);
	err = errno;
	printf("splat prctl returned %d (errno %d: %s)\n", ret, err, strerror(err));
	fflush(stdout);
	return ret == 0 ? 0 : 1;
}
