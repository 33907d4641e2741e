/* What the kernel tells about the machine under it (see internal.h,
 * tio__host_reports_free_pages). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

/* VIRTIO_BALLOON_F_REPORTING (the virtio specification, 5.5.3): the
 * driver reports free pages to the device, which may take them back. */
#define BALLOON_F_REPORTING 5u

int tio__host_reports_free_pages(const char *balloon_dir) {
    DIR *d = opendir(balloon_dir);
    if (!d) return 0;
    int yes = 0;
    struct dirent *e;
    while (!yes && (e = readdir(d)) != NULL) {
        /* the driver's devices: virtio0, virtio1, ... (symbolic links) */
        if (strncmp(e->d_name, "virtio", 6) != 0) continue;
        char path[sizeof e->d_name + 16];
        size_t n = strlen(e->d_name);
        memcpy(path, e->d_name, n);
        memcpy(path + n, "/features", sizeof "/features");
        int fd = openat(dirfd(d), path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        /* one character per feature bit, '0' or '1', bit 0 first */
        char bits[64];
        ssize_t got;
        do got = read(fd, bits, sizeof bits);
        while (got < 0 && errno == EINTR);
        close(fd);
        yes = got > (ssize_t)BALLOON_F_REPORTING && bits[BALLOON_F_REPORTING] == '1';
    }
    closedir(d);
    return yes;
}
