/*
 * Fault test "splat": asks a kernel carrying tests/faults/splat/ (the
 * PR_KMATRIX_SPLAT prctl) to print a non-fatal "BUG: sleeping function
 * called from invalid context" report, so the harness can check that a
 * kernel splat is found on the console and pinned on the test running at
 * the time, while the kernel and the remaining tests go on normally.
 *
 * Exit status: 0 if prctl() returned 0 (the splat was printed), 1 otherwise
 * (a kernel without the patch rejects the option with EINVAL).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

#define PR_KMATRIX_SPLAT 0x4b4d4254

int main(void)
{
	int ret;
	int err;

	errno = 0;
	/* The variadic arguments are read as unsigned long by the kernel ABI. */
	ret = prctl(PR_KMATRIX_SPLAT, 0UL, 0UL, 0UL, 0UL);
	err = errno;
	printf("splat prctl returned %d (errno %d: %s)\n", ret, err, strerror(err));
	fflush(stdout);
	return ret == 0 ? 0 : 1;
}
