/* Crashes after burning CPU, or recovers from its own faults.
 *   crash segv     burn 1 CPU-s in burn_before_crash, then write through NULL
 *   crash abort    the same, then abort()
 *   crash recover  a SIGSEGV handler installed at start recovers 3 faults
 *                  with siglongjmp; prints "recovered N" and whether the
 *                  profile file ($CPUPROFILE) exists before exit
 *   crash early-recover / early-reporter
 *                  the handler is installed BEFORE profiling starts
 *                  (ProfilerStart, when a profiler provides it):
 *                  early-recover recovers as above; early-reporter prints
 *                  "reporter", puts SIG_DFL back and returns, so the fault
 *                  comes again and kills the process (as crash reporters do) */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "burn.h"

DEFINE_BURN(burn_before_crash)
DEFINE_BURN(burn_after_recovery)

int ProfilerStart(const char *fname) __attribute__((weak));
void ProfilerStop(void) __attribute__((weak));

static sigjmp_buf recovery;

static void recover(int sig) {
    (void)sig;
    siglongjmp(recovery, 1);
}

static void reporter(int sig) {
    static const char line[] = "reporter\n";
    if (write(1, line, sizeof line - 1) < 0) {}
    signal(sig, SIG_DFL);
}

static void install(void (*handler)(int)) {
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = handler;
    sigemptyset(&action.sa_mask);
    sigaction(SIGSEGV, &action, NULL);
}

static volatile int *volatile nowhere = NULL;

static int profile_exists(void) {
    const char *path = getenv("CPUPROFILE");
    if (!path) path = getenv("CRASH_PROFILE");
    return path && access(path, F_OK) == 0;
}

static void recover_three_times(void) {
    int recovered = 0;
    for (int i = 0; i < 3; i++) {
        if (sigsetjmp(recovery, 1) == 0) {
            *nowhere = 1;
        } else {
            recovered++;
        }
    }
    printf("recovered %d\n", recovered);
    burn_after_recovery(0.3);
    printf("profile before exit: %s\n", profile_exists() ? "present" : "absent");
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "segv";
    setvbuf(stdout, NULL, _IONBF, 0);
    if (strcmp(mode, "segv") == 0) {
        burn_before_crash(1.0);
        *nowhere = 1;
    } else if (strcmp(mode, "abort") == 0) {
        burn_before_crash(1.0);
        abort();
    } else if (strcmp(mode, "recover") == 0) {
        install(recover);
        recover_three_times();
    } else if (strcmp(mode, "early-recover") == 0 || strcmp(mode, "early-reporter") == 0) {
        int early_recover = strcmp(mode, "early-recover") == 0;
        install(early_recover ? recover : reporter);
        const char *path = getenv("CRASH_PROFILE");
        if (path && ProfilerStart) ProfilerStart(path);
        if (early_recover) {
            recover_three_times();
            if (ProfilerStop) ProfilerStop();
        } else {
            burn_before_crash(1.0);
            *nowhere = 1;
        }
    }
    return 0;
}
