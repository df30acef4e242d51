/*
 * What it costs the agent's CPU to move a GET's body from a socket into a staging segment, by each
 * way the kernel offers: a forked child writes 1 GiB into a loopback TCP socket; the parent moves it
 * into a 64 MiB tmpfs file (its pages reused after the first pass, as a staging region's are) and
 * prints its own CPU seconds per GiB. docs/PERFORMANCE.md has the numbers and what they decided.
 *
 *   gcc -O2 -o /tmp/copy-paths tests-integration/bench/copy-paths.c
 *   /tmp/copy-paths read 1048576     # read(2) into a buffer, pwrite(2) into the file (the agent's way)
 *   /tmp/copy-paths splice 1048576   # splice(2) socket -> pipe -> file: no copy into the process
 *   /tmp/copy-paths map 1048576      # read(2) straight into a shared mapping of the file
 *   /tmp/copy-paths mapped 1048576   # the same, the mapping populated beforehand (MADV_POPULATE_WRITE)
 * The second argument is the most bytes one call moves.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define TOTAL (1L << 30)
#ifndef FILE_SIZE
#define FILE_SIZE (64L << 20) /* -DFILE_SIZE="(1L << 30)": every page new, as in a fresh region */
#endif

static double cpu_seconds(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_utime.tv_sec + r.ru_stime.tv_sec + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6;
}

static void fail(const char *what) {
    perror(what);
    exit(1);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s read|splice|map|mapped BYTES_PER_CALL\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    long step = atol(argv[2]);
    int listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof address;
    if (bind(listener, (void *) &address, sizeof address) || getsockname(listener, (void *) &address, &length)
        || listen(listener, 1)) {
        fail("listen");
    }
    if (fork() == 0) {
        int out = socket(AF_INET, SOCK_STREAM, 0);
        if (connect(out, (void *) &address, sizeof address)) {
            fail("connect");
        }
        char *bytes = malloc(1 << 20);
        memset(bytes, 7, 1 << 20);
        for (long sent = 0; sent < TOTAL;) {
            long n = write(out, bytes, 1 << 20);
            if (n <= 0) {
                fail("write");
            }
            sent += n;
        }
        return 0;
    }
    int in = accept(listener, 0, 0);
    char path[64];
    snprintf(path, sizeof path, "/dev/shm/copy-paths-%d", getpid());
    int file = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (file < 0 || ftruncate(file, FILE_SIZE)) {
        fail(path);
    }
    unlink(path);
    int pipe_ends[2];
    if (pipe(pipe_ends)) {
        fail("pipe");
    }
    fcntl(pipe_ends[1], F_SETPIPE_SZ, step < (1 << 20) ? (1 << 20) : step);
    char *buffer = aligned_alloc(4096, step);
    char *map = NULL;
    if (strncmp(mode, "map", 3) == 0) {
        map = mmap(NULL, FILE_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, file, 0);
        if (map == MAP_FAILED) {
            fail("mmap");
        }
        if (strcmp(mode, "mapped") == 0 && madvise(map, FILE_SIZE, MADV_POPULATE_WRITE)) {
            fail("madvise");
        }
    }
    double cpu0 = cpu_seconds();
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    long moved = 0;
    while (moved < TOTAL) {
        long at = moved % FILE_SIZE;
        long want = step < FILE_SIZE - at ? step : FILE_SIZE - at;
        long n;
        if (map != NULL) {
            n = read(in, map + at, want);
        } else if (strcmp(mode, "splice") == 0) {
            n = splice(in, NULL, pipe_ends[1], NULL, want, SPLICE_F_MOVE);
            loff_t offset = at;
            for (long drained = 0; n > 0 && drained < n;) {
                long k = splice(pipe_ends[0], NULL, file, &offset, n - drained, SPLICE_F_MOVE);
                if (k <= 0) {
                    fail("splice into the file");
                }
                drained += k;
            }
        } else {
            n = read(in, buffer, want);
            if (n > 0 && pwrite(file, buffer, n, at) != n) {
                fail("pwrite");
            }
        }
        if (n <= 0) {
            fail("socket");
        }
        moved += n;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("%-7s %8ld B per call: %.2f CPU s per GiB, %.0f MB/s\n", mode, step, (cpu_seconds() - cpu0) * TOTAL / moved,
           moved / 1e6 / wall);
    wait(NULL);
    return 0;
}
