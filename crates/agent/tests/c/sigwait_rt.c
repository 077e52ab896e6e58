/* Waits for a real-time signal it blocked, with no handler of its own:
 * SIGRTMAX (the one a profiler picks first) unless argv[2] names another.
 * argv[1] says how: sigwait, sigwaitinfo, sigtimedwait or signalfd. Two
 * threads burn CPU with the signal blocked; a sender thread sends it three
 * ways (to the waiting thread, to the process, queued with a value), the
 * first while the waiter still works, before it waits. Prints what the
 * waiter got; SIGALRM ends a run that loses a signal. */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>
#include "burn.h"

DEFINE_BURN(worker_burn)
DEFINE_BURN(waiter_burn)

static int sig;
static const char *mode;
static pthread_t waiter;
static sem_t got, ready;
static volatile int stop;

static const char *code_name(int code) {
    switch (code) {
    case SI_USER: return "SI_USER";
    case SI_QUEUE: return "SI_QUEUE";
    case SI_TKILL: return "SI_TKILL";
    default: return "other";
    }
}

static void *work(void *arg) {
    (void)arg;
    while (!stop) worker_burn(0.01);
    return NULL;
}

static void report(int n, int signo, int code, int value, int pid) {
    printf("%d: signal %s%d, %s", n, signo == sig ? "SIGWANTED=" : "", signo, code_name(code));
    if (code == SI_QUEUE) printf(", value %d", value);
    printf(", from %s\n", pid == getpid() ? "this process" : "elsewhere");
    fflush(stdout);
}

static void *wait_for_signals(void *arg) {
    (void)arg;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    waiter_burn(0.05);
    sem_post(&ready);
    waiter_burn(0.05); /* the first signal comes now, before we wait */
    int fd = -1;
    if (strcmp(mode, "signalfd") == 0) fd = signalfd(-1, &set, SFD_CLOEXEC);
    for (int n = 1; n <= 3; n++) {
        siginfo_t info;
        memset(&info, 0, sizeof info);
        int signo = -1;
        if (strcmp(mode, "sigwait") == 0) {
            if (sigwait(&set, &signo) != 0) signo = -1;
            info.si_code = SI_USER; /* sigwait says no more */
            info.si_pid = getpid();
        } else if (strcmp(mode, "sigwaitinfo") == 0) {
            signo = sigwaitinfo(&set, &info);
        } else if (strcmp(mode, "sigtimedwait") == 0) {
            struct timespec limit = {8, 0};
            signo = sigtimedwait(&set, &info, &limit);
        } else {
            struct signalfd_siginfo s;
            if (read(fd, &s, sizeof s) == sizeof s) {
                signo = s.ssi_signo;
                info.si_code = s.ssi_code;
                info.si_pid = s.ssi_pid;
                info.si_value.sival_int = s.ssi_int;
            }
        }
        if (strcmp(mode, "sigwait") == 0)
            printf("%d: signal %s%d\n", n, signo == sig ? "SIGWANTED=" : "", signo);
        else
            report(n, signo, info.si_code, info.si_value.sival_int, info.si_pid);
        fflush(stdout);
        sem_post(&got);
    }
    return NULL;
}

int main(int argc, char **argv) {
    mode = argc > 1 ? argv[1] : "sigwait";
    sig = argc > 2 ? atoi(argv[2]) : SIGRTMAX;
    alarm(20);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    sigset_t back;
    pthread_sigmask(SIG_BLOCK, NULL, &back);
    printf("blocked as asked: %s\n", sigismember(&back, sig) ? "yes" : "no");
    sem_init(&got, 0, 0);
    sem_init(&ready, 0, 0);
    pthread_t workers[2];
    for (int i = 0; i < 2; i++) pthread_create(&workers[i], NULL, work, NULL);
    pthread_create(&waiter, NULL, wait_for_signals, NULL);
    while (sem_wait(&ready) != 0) {}
    pthread_kill(waiter, sig); /* to the thread, before it waits */
    while (sem_wait(&got) != 0) {} /* EINTR: a profiler's signal */
    kill(getpid(), sig); /* to the process: any thread may take it */
    while (sem_wait(&got) != 0) {} /* EINTR: a profiler's signal */
    union sigval value = {.sival_int = 42};
    sigqueue(getpid(), sig, value);
    while (sem_wait(&got) != 0) {} /* EINTR: a profiler's signal */
    stop = 1;
    for (int i = 0; i < 2; i++) pthread_join(workers[i], NULL);
    pthread_join(waiter, NULL);
    sigset_t pending;
    sigpending(&pending);
    printf("still pending: %s\n", sigismember(&pending, sig) ? "yes" : "no");
    return 0;
}
