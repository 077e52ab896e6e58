/* A launcher of the kind Chromium's base::LaunchProcess is: a threaded
 * parent blocks every signal, forks (libc fork: pthread_atfork handlers
 * run), and the child resets every signal's disposition to SIG_DFL with
 * the raw rt_sigaction system call (no libc wrapper, so no interposer
 * sees it), restores its mask, works a little (moving descriptors, as a
 * launcher does), then execs a program. A signal that reaches the child
 * between the reset and the exec with the default action "terminate"
 * (every real-time signal's) kills it.
 *
 * Argument: how many children (default 200). A last child is a forked
 * worker that never execs and burns 0.3 CPU-s in child_work (it keeps
 * the dispositions it inherited, as a pre-forked worker does, and is
 * profiled). Prints how many
 * children were killed by a signal, and the last such signal. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "burn.h"

DEFINE_BURN(parent_work)
DEFINE_BURN(child_work)
DEFINE_BURN(pre_exec_work)

/* The kernel's struct sigaction (not libc's). */
struct kernel_sigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    unsigned long mask;
};

static void reset_every_disposition(void) {
    struct kernel_sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    for (int s = 1; s <= 64; s++)
        if (s != SIGKILL && s != SIGSTOP)
            syscall(SYS_rt_sigaction, s, &dfl, NULL, 8);
}

static void *spin(void *arg) {
    (void)arg;
    for (;;) parent_work(0.05);
    return NULL;
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 200;
    pthread_t thread;
    pthread_create(&thread, NULL, spin, NULL);
    int killed = 0, last = 0;
    for (int i = 0; i <= n; i++) {
        sigset_t all, old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pid_t pid = fork();
        if (pid == 0) {
            if (i == n) {
                pthread_sigmask(SIG_SETMASK, &old, NULL);
                child_work(0.3);
                _exit(0);
            }
            reset_every_disposition();
            pthread_sigmask(SIG_SETMASK, &old, NULL);
            pre_exec_work(0.002);
            execl("/bin/true", "true", (char *)NULL);
            _exit(127);
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        int status;
        waitpid(pid, &status, 0);
        if (WIFSIGNALED(status)) {
            killed++;
            last = WTERMSIG(status);
        } else if (WEXITSTATUS(status) != 0) {
            printf("child %d exited with %d\n", i, WEXITSTATUS(status));
        }
    }
    printf("children killed by a signal: %d of %d (last: %d)\n", killed, n + 1, last);
    return 0;
}
