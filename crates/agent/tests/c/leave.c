/* leave WAY SECONDS [PROGRAM]: burns SECONDS of CPU, then leaves by WAY:
 *   return        returns from main
 *   _exit, _Exit  _exit(0), _Exit(0)
 *   exit_group    the raw exit_group system call
 *   exec          execl(PROGRAM, PROGRAM, NULL)
 *   exec-missing  execv of a file that does not exist (must fail with
 *                 ENOENT), then burns SECONDS more and returns
 *   vfork-exec    vfork, the child execv's PROGRAM; vfork again, the
 *                 child's execv fails and it _exit(127)s; the parent burns
 *                 SECONDS more and prints the first child's pid
 *   execl-args    execl of /bin/sh printing 9 arguments (some passed on
 *                 the stack); execle with its own environment; execlp
 *                 through PATH (these three print instead of burning)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "burn.h"

DEFINE_BURN(before_leaving)
DEFINE_BURN(after_failed_exec)
DEFINE_BURN(after_vfork)

static int wait_for(pid_t pid, int expected) {
    int status;
    if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != expected) {
        fprintf(stderr, "child %d: status %#x, expected exit %d\n", (int)pid, status, expected);
        return 0;
    }
    return 1;
}

static int variadic_execs(void) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        execl("/bin/sh", "sh", "-c", "printf '%s,' \"$0\" \"$@\"; echo", "a0", "a1", "a2", "a3",
              "a4", "a5", "a6", "a7", (char *)NULL);
        _exit(126);
    }
    if (!wait_for(pid, 0)) return 1;
    pid = fork();
    if (pid == 0) {
        char *const env[] = {"LEAVE_ENV=from-execle", NULL};
        execle("/bin/sh", "sh", "-c", "echo \"$LEAVE_ENV\" \"$1\"", "sh", "second", (char *)NULL, env);
        _exit(126);
    }
    if (!wait_for(pid, 0)) return 1;
    pid = fork();
    if (pid == 0) {
        execlp("sh", "sh", "-c", "echo execlp \"$0\"", "found", (char *)NULL);
        _exit(126);
    }
    if (!wait_for(pid, 0)) return 1;
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: leave WAY SECONDS [PROGRAM]\n"); return 2; }
    const char *way = argv[1];
    double seconds = atof(argv[2]);
    const char *program = argc > 3 ? argv[3] : "/bin/true";
    if (!strcmp(way, "execl-args")) return variadic_execs();
    before_leaving(seconds);
    if (!strcmp(way, "return")) return 0;
    if (!strcmp(way, "_exit")) _exit(0);
    if (!strcmp(way, "_Exit")) _Exit(0);
    if (!strcmp(way, "exit_group")) syscall(SYS_exit_group, 0);
    if (!strcmp(way, "exec")) {
        execl(program, program, (char *)NULL);
        perror("execl");
        return 126;
    }
    if (!strcmp(way, "exec-missing")) {
        char *const args[] = {"missing", NULL};
        if (execv("/nonexistent/cpuprof-test/missing", args) != -1 || errno != ENOENT) {
            fprintf(stderr, "execv of a missing file: errno %d\n", errno);
            return 1;
        }
        after_failed_exec(seconds);
        return 0;
    }
    if (!strcmp(way, "vfork-exec")) {
        char *const args[] = {(char *)program, NULL};
        pid_t first = vfork();
        if (first == 0) {
            execv(program, args);
            _exit(127);
        }
        pid_t second = vfork();
        if (second == 0) {
            execv("/nonexistent/cpuprof-test/missing", args);
            _exit(127);
        }
        if (!wait_for(first, 0) || !wait_for(second, 127)) return 1;
        after_vfork(seconds);
        printf("%d\n", (int)first);
        return 0;
    }
    fprintf(stderr, "unknown way %s\n", way);
    return 2;
}
