/*
 * cli_producer.c: how a command reaches `trove serve` as a producer — the producers' socket
 * and the hello (docs/serve.md, "Producers") — for `trove record`, `trove gen --live` and
 * the sampler's live mode (record_sample.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "cli.h"
#include "trove/serve.h"

/* The service's socket: --socket, else the store's (a store on S3 has no directory: then
 * $TROVE_SOCKET, else trove.sock here, as `trove serve` makes it). */
const char *cli_socket_for(const char *given, const char *store, char *buf, size_t cap)
{
    const char *env = getenv("TROVE_SOCKET");
    if (given)
        return given;
    if (!strncmp(cli_default_store(store), "s3://", 5))
        return env && *env ? env : TROVE_SERVE_SOCKET_NAME;
    snprintf(buf, cap, "%s/%s", cli_default_store(store), TROVE_SERVE_SOCKET_NAME);
    return buf;
}

int cli_producer_connect(const char *cmd, const char *path, const char *capture, int append,
                         const char *producer)
{
    struct sockaddr_un sun;
    char hello[512];
    int fd, n;

    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sun.sun_path) {
        cli_error(cmd, "%s: the socket path is too long", path);
        return -1;
    }
    memcpy(sun.sun_path, path, strlen(path));
    if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
        cli_error(cmd, "a socket: %s", strerror(errno));
        return -1;
    }
    if (connect(fd, (struct sockaddr *)&sun, sizeof sun) != 0) {
        cli_error(cmd, "%s: %s (is `trove serve` running on that store? --socket names "
                       "another)", path, strerror(errno));
        close(fd);
        return -1;
    }
    n = snprintf(hello, sizeof hello,
                 "{\"capture\":\"%s\",\"producer\":\"%s\",\"pid\":%ld,\"append\":%s}\n", capture,
                 producer, (long)getpid(), append ? "true" : "false");
    if (cli_write_all(fd, hello, (size_t)n) != 0) {
        cli_error(cmd, "%s: sending the hello: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

