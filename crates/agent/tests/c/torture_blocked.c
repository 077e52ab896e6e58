/* Threads that block every signal, as servers do: ARGV[1] rounds of fixed
 * work in each of 2 workers that block all signals for their whole life
 * (and exit with them blocked), 2 that block only SIGUSR1 and SIGTERM,
 * and a signal thread that waits for every signal with sigwaitinfo and
 * prints each one it gets; the main thread sends the process SIGUSR1
 * three times and SIGTERM at the end. A profiler's own signal must never
 * reach sigwaitinfo. */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long rounds;
/* Posted by the signal thread after each signal it printed: the next is
 * sent only then (two SIGUSR1 pending at once would merge into one). */
static sem_t printed;

__attribute__((noinline)) uint64_t blocked_work(uint64_t seed, long n) {
    uint64_t x = seed * 2 + 1;
    for (long i = 0; i < n; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

__attribute__((noinline)) uint64_t unblocked_work(uint64_t seed, long n) {
    uint64_t x = seed * 2 + 3;
    for (long i = 0; i < n; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

static void *blocked_worker(void *arg) {
    /* Signals stay blocked (inherited from main) for the thread's life. */
    return (void *)(uintptr_t)blocked_work((uint64_t)(uintptr_t)arg, rounds);
}

static void *unblocked_worker(void *arg) {
    /* Every signal but the two the signal thread waits for. */
    sigset_t others;
    sigfillset(&others);
    sigdelset(&others, SIGUSR1);
    sigdelset(&others, SIGTERM);
    pthread_sigmask(SIG_UNBLOCK, &others, NULL);
    return (void *)(uintptr_t)unblocked_work((uint64_t)(uintptr_t)arg, rounds);
}

static void *signal_thread(void *arg) {
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    for (;;) {
        siginfo_t info;
        int sig = sigwaitinfo(&all, &info);
        if (sig < 0) continue;
        printf("signal thread: got signal %d\n", sig);
        fflush(stdout);
        sem_post(&printed);
        if (sig == SIGTERM) return NULL;
    }
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s ROUNDS\n", argv[0]); return 2; }
    rounds = atol(argv[1]);
    sem_init(&printed, 0, 0);
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL); /* every thread created from here inherits it */
    pthread_t waiter, workers[4];
    pthread_create(&waiter, NULL, signal_thread, NULL);
    for (long i = 0; i < 4; i++)
        pthread_create(&workers[i], NULL, i < 2 ? blocked_worker : unblocked_worker, (void *)i);
    uint64_t sum = 0;
    for (int i = 0; i < 3; i++) {
        struct timespec pause = {0, 50 * 1000 * 1000};
        nanosleep(&pause, NULL);
        kill(getpid(), SIGUSR1);
        sem_wait(&printed);
    }
    for (int i = 0; i < 4; i++) {
        void *result;
        pthread_join(workers[i], &result);
        sum ^= (uint64_t)(uintptr_t)result;
    }
    struct timespec pause = {0, 50 * 1000 * 1000};
    nanosleep(&pause, NULL);
    kill(getpid(), SIGTERM);
    pthread_join(waiter, NULL);
    printf("workers done, checksum %016llx\n", (unsigned long long)sum);
    return 0;
}
