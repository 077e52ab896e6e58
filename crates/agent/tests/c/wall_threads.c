/* Wall-clock sampling: thread "spinner" spins for ARGV[1] seconds of wall
 * time (default 2) in spin_wall; thread "reader" blocks in read() on a
 * pipe in wait_for_pipe for the same time, until the main thread writes
 * to it. Prints "read N" (the reader's result), "spun S" (the
 * spinner's wall seconds) and "spinner cpu S" (its CPU seconds: on a busy
 * machine it is not on CPU all the time it spins). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double seconds = 2.0;
static int pipe_fds[2];
static double spun, spun_cpu;
static long got;

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static double spin_wall(double wall) {
    double start = now(), x = 1.0;
    while (now() - start < wall)
        for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 1e-9;
    spun = now() - start;
    struct timespec cpu;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu);
    spun_cpu = cpu.tv_sec + cpu.tv_nsec / 1e9;
    return x;
}

static void *spinner(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "spinner");
    spin_wall(seconds);
    return NULL;
}

__attribute__((noinline)) static long wait_for_pipe(void) {
    char byte;
    return read(pipe_fds[0], &byte, 1);
}

static void *reader(void *arg) {
    (void)arg;
    pthread_setname_np(pthread_self(), "reader");
    got = wait_for_pipe();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) seconds = atof(argv[1]);
    if (pipe(pipe_fds) != 0) return 2;
    pthread_t threads[2];
    pthread_create(&threads[0], NULL, spinner, NULL);
    pthread_create(&threads[1], NULL, reader, NULL);
    struct timespec deadline;
    clock_gettime(CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += (time_t)seconds;
    deadline.tv_nsec += (long)((seconds - (time_t)seconds) * 1e9);
    if (deadline.tv_nsec >= 1000000000) { deadline.tv_sec++; deadline.tv_nsec -= 1000000000; }
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &deadline, NULL) != 0) {}
    if (write(pipe_fds[1], "x", 1) != 1) return 3;
    pthread_join(threads[0], NULL);
    pthread_join(threads[1], NULL);
    printf("read %ld\nspun %.3f\nspinner cpu %.3f\n", got, spun, spun_cpu);
    return 0;
}
