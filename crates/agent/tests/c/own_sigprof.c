/* A program with its own profiler: a SIGPROF handler and ITIMER_PROF at
 * 100 Hz while it burns ARGV[1] CPU seconds; prints how often its handler
 * ran and the process CPU time used. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include "burn.h"

DEFINE_BURN(own_burn)

static volatile sig_atomic_t ticks;
static void on_prof(int sig) { (void)sig; ticks++; }

int main(int argc, char **argv) {
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_prof;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = {{0, 10000}, {0, 10000}};
    setitimer(ITIMER_PROF, &it, NULL);
    own_burn(seconds);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    printf("handler %d cpu %.3f\n", (int)ticks, ts.tv_sec + ts.tv_nsec / 1e9);
    return 0;
}
