/*
 * The pause process of a test node's sandbox image: what the kubelet's
 * registry.k8s.io/pause image runs as each pod's first process. It sleeps
 * until SIGINT or SIGTERM and then exits 0, and reaps any child it is left
 * with. Built statically (no libc in the image), by tests/images/build.sh.
 */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void shut_down(int signo)
{
    (void)signo;
    _exit(0);
}

static void reap(int signo)
{
    (void)signo;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void)
{
    struct sigaction down = {0}, child = {0};

    down.sa_handler = shut_down;
    child.sa_handler = reap;
    child.sa_flags = SA_NOCLDSTOP;
    if (sigaction(SIGINT, &down, NULL) < 0 || sigaction(SIGTERM, &down, NULL) < 0 ||
        sigaction(SIGCHLD, &child, NULL) < 0) {
        return 1;
    }
    for (;;) {
        pause();
    }
}
