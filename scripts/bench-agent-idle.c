/* Idle threads for scripts/bench-agent-realtime: ARGV[1] threads (default
 * 100) block in read() on a pipe for ARGV[2] seconds (default 5) of wall
 * time, while the main thread sleeps; then the pipe is closed and they
 * end. Almost no CPU of its own: what a profiler adds is its cost. */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int fds[2];

static void *idle(void *arg) {
    (void)arg;
    char byte;
    while (read(fds[0], &byte, 1) > 0) {}
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100;
    double seconds = argc > 2 ? atof(argv[2]) : 5.0;
    if (pipe(fds) != 0) return 2;
    pthread_t *threads = calloc(n, sizeof *threads);
    for (int i = 0; i < n; i++) pthread_create(&threads[i], NULL, idle, NULL);
    struct timespec end;
    clock_gettime(CLOCK_MONOTONIC, &end);
    end.tv_sec += (time_t)seconds;
    end.tv_nsec += (long)((seconds - (time_t)seconds) * 1e9);
    if (end.tv_nsec >= 1000000000L) { end.tv_sec++; end.tv_nsec -= 1000000000L; }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &end, NULL) != 0) {}
    close(fds[1]);
    for (int i = 0; i < n; i++) pthread_join(threads[i], NULL);
    return 0;
}
