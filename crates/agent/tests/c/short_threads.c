/* Threads that each live shorter than one sampling period: N threads, one
 * after another, each burning S seconds of its own CPU time in short_work.
 * Prints the CPU time the threads spent in short_work, summed. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "burn.h"

DEFINE_BURN(short_work)

static double seconds;
static double total;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *run(void *arg) {
    (void)arg;
    double start = thread_cpu_seconds();
    short_work(seconds);
    double spent = thread_cpu_seconds() - start;
    pthread_mutex_lock(&lock);
    total += spent;
    pthread_mutex_unlock(&lock);
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 600;
    seconds = argc > 2 ? atof(argv[2]) : 0.00033;
    for (int i = 0; i < threads; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, run, NULL) != 0) return 1;
        pthread_join(t, NULL);
    }
    printf("%.6f\n", total);
    return 0;
}
