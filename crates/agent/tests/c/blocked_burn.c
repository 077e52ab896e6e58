/* Worker threads that block every signal (as servers do, leaving signals
 * to one thread), burn ARGV[1] CPU seconds each, then unblock them. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include "burn.h"

DEFINE_BURN(blocked_burn)

static double seconds = 2.0;

static void *worker(void *arg) {
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    blocked_burn(seconds);
    pthread_sigmask(SIG_UNBLOCK, &all, NULL);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc > 1) seconds = atof(argv[1]);
    pthread_t threads[2];
    for (int i = 0; i < 2; i++) pthread_create(&threads[i], NULL, worker, NULL);
    for (int i = 0; i < 2; i++) pthread_join(threads[i], NULL);
    printf("done\n");
    return 0;
}
