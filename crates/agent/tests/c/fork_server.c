/* fork_server: the shape of Chromium's zygote. A process that must stay
 * single-threaded (it counts /proc/self/task, as sandboxes do before they
 * fork or engage), forks children that only call async-signal-safe
 * functions (they count their own threads and report through a pipe with
 * write(2)), and makes one child with the raw clone system call (which
 * skips pthread_atfork handlers, as Chromium's ForkWithFlags does).
 * Prints the thread count each one saw: 1 everywhere without a profiler. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "burn.h"
DEFINE_BURN(server_work)
DEFINE_BURN(child_work)

/* Entries of /proc/self/task with getdents64 only (async-signal-safe). */
static int count_threads(void) {
    int fd = open("/proc/self/task", 0x10000 /* O_DIRECTORY */);
    if (fd < 0) return -1;
    char buf[4096];
    int n = 0;
    long got;
    while ((got = syscall(SYS_getdents64, fd, buf, sizeof buf)) > 0) {
        for (long off = 0; off < got;) {
            unsigned short reclen = *(unsigned short *)(buf + off + 16);
            const char *name = buf + off + 19;
            if (name[0] != '.') n++;
            off += reclen;
        }
    }
    close(fd);
    return n;
}

static void report(int fd, char what, int threads) {
    char line[2] = {what, (char)('0' + (threads > 9 ? 9 : threads))};
    write(fd, line, 2);
}

int main(void) {
    printf("server %d\n", count_threads());
    fflush(stdout);
    server_work(0.2);
    printf("server after work %d\n", count_threads());
    fflush(stdout);
    int p[2];
    if (pipe(p) != 0) return 2;
    for (int i = 0; i < 3; i++) {
        pid_t kid = fork();
        if (kid == 0) {
            /* Only async-signal-safe calls from here on. */
            int before = count_threads();
            child_work(0.1);
            int after = count_threads();
            report(p[1], 'f', before > after ? before : after);
            _exit(0);
        }
        int status;
        if (waitpid(kid, &status, 0) != kid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 3;
    }
    long kid = syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
    if (kid == 0) {
        report(p[1], 'c', count_threads());
        syscall(SYS_exit_group, 0);
    }
    int status;
    if (waitpid((pid_t)kid, &status, 0) != kid || !WIFEXITED(status)) return 4;
    close(p[1]);
    char buf[64];
    ssize_t n = read(p[0], buf, sizeof buf);
    for (ssize_t i = 0; i + 1 < n; i += 2)
        printf("%s %c\n", buf[i] == 'f' ? "forked child" : "cloned child", buf[i + 1]);
    printf("server at the end %d\n", count_threads());
    return 0;
}
