/* A toy program for the shim tests (chaos/tests/shims.sh):
 *   toy fsync FILE   writes a byte, prints "fsync=RC errno=E fdatasync=RC errno=E"
 *   toy clock        prints "realtime=S coarse=S time=S tod=S monotonic=S"
 *   toy connect      connects to a listener of its own on 127.0.0.1 and prints
 *                    "source=ADDR" (the connecting socket's address)
 *   toy lose FILE    writes "synced." and fdatasyncs, then pwrites "XX" over
 *                    its start, appends "unsynced", grows the file with
 *                    ftruncate, and SIGKILLs itself
 *   toy flock DIR    takes an exclusive flock on DIR and prints "flock=RC" */
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int
toy_fsync(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "x", 1) != 1)
        return 1;
    int a = fsync(fd), ea = a ? errno : 0;
    int b = fdatasync(fd), eb = b ? errno : 0;
    printf("fsync=%d errno=%s fdatasync=%d errno=%s\n", a, ea == EIO ? "EIO" : "0", b,
           eb == EIO ? "EIO" : "0");
    close(fd);
    return 0;
}

static int
toy_clock(void)
{
    struct timespec rt, co, mo;
    struct timeval tv;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_REALTIME_COARSE, &co);
    clock_gettime(CLOCK_MONOTONIC, &mo);
    gettimeofday(&tv, NULL);
    printf("realtime=%lld coarse=%lld time=%lld tod=%lld monotonic=%lld\n", (long long)rt.tv_sec,
           (long long)co.tv_sec, (long long)time(NULL), (long long)tv.tv_sec,
           (long long)mo.tv_sec);
    return 0;
}

static int
toy_lose(const char *path)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, "synced.", 7) != 7 || fdatasync(fd) != 0)
        return 1;
    if (pwrite(fd, "XX", 2, 0) != 2 || write(fd, "unsynced", 8) != 8 || ftruncate(fd, 4096) != 0)
        return 1;
    kill(getpid(), SIGKILL);
    return 1;
}

static int
toy_connect(void)
{
    int l = socket(AF_INET, SOCK_STREAM, 0), c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof(a);
    if (l < 0 || c < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(l, 1) != 0 ||
        getsockname(l, (struct sockaddr *)&a, &al) != 0 ||
        connect(c, (struct sockaddr *)&a, sizeof(a)) != 0)
        return 1;
    struct sockaddr_in me;
    socklen_t ml = sizeof(me);
    char buf[INET_ADDRSTRLEN];
    if (getsockname(c, (struct sockaddr *)&me, &ml) != 0 ||
        inet_ntop(AF_INET, &me.sin_addr, buf, sizeof(buf)) == NULL)
        return 1;
    printf("source=%s\n", buf);
    close(c);
    close(l);
    return 0;
}

static int
toy_flock(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return 1;
    printf("flock=%d\n", flock(fd, LOCK_EX | LOCK_NB));
    close(fd);
    return 0;
}

int
main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "fsync") == 0)
        return toy_fsync(argv[2]);
    if (argc == 2 && strcmp(argv[1], "clock") == 0)
        return toy_clock();
    if (argc == 2 && strcmp(argv[1], "connect") == 0)
        return toy_connect();
    if (argc == 3 && strcmp(argv[1], "lose") == 0)
        return toy_lose(argv[2]);
    if (argc == 3 && strcmp(argv[1], "flock") == 0)
        return toy_flock(argv[2]);
    fputs("usage: toy fsync FILE | clock | connect | lose FILE | flock DIR\n", stderr);
    return 2;
}
