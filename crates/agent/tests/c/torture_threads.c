/* Thread churn: ARGV[1] threads created and joined, at most ARGV[2] alive
 * at a time, each doing ARGV[3] rounds of fixed work (no clock, so the
 * checksum printed is the same with and without a profiler). Every
 * fourth thread leaves by pthread_exit, every eighth is detached (and
 * reports through a counter). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long rounds;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t detached_done = PTHREAD_COND_INITIALIZER;
static uint64_t detached_sum;
static long detached_left;

__attribute__((noinline)) uint64_t churn_work(uint64_t seed, long n) {
    uint64_t x = seed * 2 + 1;
    for (long i = 0; i < n; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

static void *worker(void *arg) {
    long index = (long)arg;
    uint64_t result = churn_work((uint64_t)index, rounds);
    if (index % 8 == 7) {
        pthread_mutex_lock(&lock);
        detached_sum ^= result;
        if (--detached_left == 0) pthread_cond_signal(&detached_done);
        pthread_mutex_unlock(&lock);
        return NULL;
    }
    if (index % 4 == 3) pthread_exit((void *)(uintptr_t)result);
    return (void *)(uintptr_t)result;
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: %s THREADS ALIVE ROUNDS\n", argv[0]); return 2; }
    long total = atol(argv[1]), alive = atol(argv[2]);
    rounds = atol(argv[3]);
    pthread_t *window = calloc((size_t)alive, sizeof *window);
    long *in_window = calloc((size_t)alive, sizeof *in_window);
    for (long i = 0; i < total; i++) if (i % 8 == 7) detached_left++;
    uint64_t sum = 0;
    long created = 0, joined = 0;
    for (long i = 0; i < total; i++) {
        long slot = i % alive;
        if (i >= alive && in_window[slot] >= 0) {
            void *result;
            pthread_join(window[slot], &result);
            sum ^= (uint64_t)(uintptr_t)result;
            joined++;
        }
        int rc = pthread_create(&window[slot], NULL, worker, (void *)i);
        if (rc != 0) { fprintf(stderr, "pthread_create %ld: error %d\n", i, rc); return 1; }
        created++;
        if (i % 8 == 7) { pthread_detach(window[slot]); in_window[slot] = -1; }
        else in_window[slot] = i;
    }
    for (long slot = 0; slot < alive && slot < total; slot++) {
        if (in_window[slot] < 0) continue;
        void *result;
        pthread_join(window[slot], &result);
        sum ^= (uint64_t)(uintptr_t)result;
        joined++;
    }
    pthread_mutex_lock(&lock);
    while (detached_left > 0) pthread_cond_wait(&detached_done, &lock);
    pthread_mutex_unlock(&lock);
    printf("threads %ld created, %ld joined, checksum %016llx %016llx\n", created, joined,
           (unsigned long long)sum, (unsigned long long)detached_sum);
    return 0;
}
