/* A program that, after burning 0.5 CPU s, puts a handler of its own on
 * every real-time signal that has one (the agent's sampling signal), then
 * burns 1 CPU s more; prints how often its handler ran. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "burn.h"

DEFINE_BURN(before_taking)
DEFINE_BURN(after_taking)

static volatile sig_atomic_t ran;
static void mine(int sig) { (void)sig; ran++; }

int main(void) {
    before_taking(0.5);
    for (int s = SIGRTMIN; s <= SIGRTMAX; s++) {
        struct sigaction old;
        sigaction(s, NULL, &old);
        if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = mine;
            sigaction(s, &sa, NULL);
        }
    }
    after_taking(1.0);
    printf("ran %d\n", (int)ran);
    return 0;
}
