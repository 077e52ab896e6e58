/* A fixed amount of work (not a fixed time), for overhead measurements:
 *   bench-agent-work ITERATIONS THREADS
 * Each thread runs ITERATIONS rounds of a 12-deep call chain ending in a
 * short arithmetic loop, so stacks have depth and the time per sample
 * includes unwinding. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
static long iterations = 1000000;
__attribute__((noinline)) double leaf_work(double x) {
    for (int i = 0; i < 200; i++) x = x * 1.0000001 + 1e-9;
    return x;
}
__attribute__((noinline)) double chain(int depth, double x) {
    double r = depth <= 1 ? leaf_work(x) : chain(depth - 1, x);
    __asm__ volatile("" ::: "memory");
    return r;
}
static void *thread_main(void *arg) {
    double x = 1.0 + (long)arg;
    for (long i = 0; i < iterations; i++) x = chain(12, x);
    static __thread double sink;
    sink = x;
    return NULL;
}
int main(int argc, char **argv) {
    if (argc > 1) iterations = atol(argv[1]);
    int threads = argc > 2 ? atoi(argv[2]) : 2;
    pthread_t t[64];
    for (long i = 1; i < threads; i++) pthread_create(&t[i], NULL, thread_main, (void *)i);
    thread_main(NULL);
    for (int i = 1; i < threads; i++) pthread_join(t[i], NULL);
    return 0;
}
