/* pipe:COMMAND sources: the command run by /bin/sh -c with its standard
 * output on a pipe; its exit status checked when it is done. */
#include "source/source.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

int tio__pipe_start(const char *cmd, const char *label, int *fd, pid_t *pid, tio_error *err) {
    int p[2];
    *fd = -1;
    *pid = 0;
    if (pipe(p) != 0)
        return tio__err(err, TIO_E_IO, NULL, -1, "%s: pipe: %s", label, strerror(errno));
    posix_spawn_file_actions_t fa;
    int rc = posix_spawn_file_actions_init(&fa);
    if (!rc) rc = posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
    if (!rc) rc = posix_spawn_file_actions_addclose(&fa, p[0]);
    if (!rc) rc = posix_spawn_file_actions_addclose(&fa, p[1]);
    char *argv[] = {"sh", "-c", (char *)(uintptr_t)cmd, NULL};
    if (!rc) rc = posix_spawn(pid, "/bin/sh", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(p[1]);
    if (rc) {
        close(p[0]);
        *pid = 0;
        return tio__err(err, TIO_E_IO, NULL, -1, "%s: cannot start /bin/sh: %s", label,
                        strerror(rc));
    }
    fcntl(p[0], F_SETFD, FD_CLOEXEC);
    *fd = p[0];
    return TIO_OK;
}

int tio__pipe_finish(int fd, pid_t pid, int stop, const char *label, tio_error *err) {
    if (fd >= 0) close(fd);
    if (!pid) return TIO_OK;
    if (stop) kill(pid, SIGTERM);
    int st = 0;
    pid_t r;
    do r = waitpid(pid, &st, 0);
    while (r < 0 && errno == EINTR);
    if (r < 0) return tio__err(err, TIO_E_IO, NULL, -1, "%s: waitpid: %s", label, strerror(errno));
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return TIO_OK;
    if (WIFEXITED(st))
        return tio__err(err, TIO_E_IO, NULL, -1, "%s: the command exited with status %d", label,
                        WEXITSTATUS(st));
    return tio__err(err, TIO_E_IO, NULL, -1, "%s: the command was killed by signal %d", label,
                    WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}
