/* takes_signal [alias|libc]: after burning 0.5 CPU s, a program puts a
 * handler of its own on real-time signals, then burns 1 CPU s more and
 * prints how often its handler ran.
 *   alias: through glibc's __sigaction (which bypasses an interposed
 *          sigaction, as a raw rt_sigaction system call does), only on the
 *          real-time signals that have a handler (the agent's); having
 *          created a thread first.
 *   libc:  through sigaction, on every real-time signal, as the Go runtime
 *          does; then it sends each one to itself once with kill() and
 *          prints "sent N" — its handler must run once for each. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "burn.h"

DEFINE_BURN(before_taking)
DEFINE_BURN(after_taking)

extern int __sigaction(int, const struct sigaction *, struct sigaction *);

static volatile sig_atomic_t ran;
static void *nothing(void *arg) { return arg; }
static void mine(int sig) { (void)sig; ran++; }

int main(int argc, char **argv) {
    int libc_way = argc > 1 && strcmp(argv[1], "libc") == 0;
    int (*set)(int, const struct sigaction *, struct sigaction *) = libc_way ? sigaction : __sigaction;
    if (!libc_way) {
        /* A multi-threaded program: the agent runs its control thread,
         * which checks the signal's owner every 100 ms. */
        pthread_t t;
        pthread_create(&t, NULL, nothing, NULL);
        pthread_join(t, NULL);
    }
    before_taking(0.5);
    int sent = 0;
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++) {
        struct sigaction old;
        set(s, NULL, &old);
        if (libc_way || (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN)) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = mine;
            set(s, &sa, NULL);
        }
    }
    if (libc_way) {
        for (int s = SIGRTMIN; s <= SIGRTMAX; s++) {
            kill(getpid(), s);
            sent++;
        }
        printf("sent %d ran %d\n", sent, (int)ran);
        ran = 0;
    }
    after_taking(1.0);
    printf("ran %d\n", (int)ran);
    return 0;
}
