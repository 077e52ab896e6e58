/* A host for the HTTP endpoint tests. `http_host burn SECONDS`: alternates
 * http_hot_a (2/3 of the CPU) and http_hot_b (1/3) until SECONDS of wall
 * time have passed; `http_host idle SECONDS`: sleeps. Either way it prints
 * a fixed line, writes one to stderr, and exits with status 3, so that a
 * run under the agent can be compared with a run without it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "burn.h"
DEFINE_BURN(http_hot_a)
DEFINE_BURN(http_hot_b)
static double wall_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}
int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: http_host burn|idle SECONDS\n");
        return 2;
    }
    double seconds = atof(argv[2]);
    if (strcmp(argv[1], "idle") == 0) {
        struct timespec end;
        clock_gettime(CLOCK_MONOTONIC, &end);
        end.tv_sec += (time_t)seconds;
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end, NULL) == EINTR) {}
    } else {
        double end = wall_seconds() + seconds, x = 0;
        while (wall_seconds() < end) {
            x += http_hot_a(0.02);
            x += http_hot_b(0.01);
        }
        if (x < 0) puts("unreachable");
    }
    printf("http_host %s done\n", argv[1]);
    fprintf(stderr, "http_host stderr line\n");
    return 3;
}
