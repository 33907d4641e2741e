/* A progress line on stderr: bytes (or items), rate and ETA, redrawn in place
 * on a terminal. Shown when stderr is a terminal and the work has taken 0.5 s
 * (--progress: always, from the start; on a non-terminal as a line per second
 * and a last one); --no-progress / --quiet: never. */
#include "cli.h"

#include <string.h>
#include <time.h>
#include <unistd.h>

#define DELAY 0.5         /* seconds before an automatic line appears */
#define REDRAW 0.1        /* seconds between redraws on a terminal */
#define LOG_EVERY 1.0     /* seconds between lines on a non-terminal (forced) */

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void cli_progress_init(cli_progress *p, int mode, const char *label, const char *unit) {
    memset(p, 0, sizeof *p);
    p->mode = mode;
    p->label = label;
    p->unit = unit;
    p->tty = isatty(STDERR_FILENO);
    p->start = now();
    p->last = -1;
}

static void human(char *buf, size_t n, double v, const char *unit) {
    if (unit) {
        snprintf(buf, n, "%.0f %s", v, unit);
        return;
    }
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (v >= 1024 && u < 4) {
        v /= 1024;
        u++;
    }
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

static void draw(cli_progress *p, double t, int final) {
    char done[32], total[32], rate[40], line[200];
    double el = t - p->start;
    human(done, sizeof done, (double)p->done, p->unit);
    human(rate, sizeof rate, el > 0 ? (double)p->done / el : 0, p->unit);
    size_t at;
    if (p->unit && p->total) /* "3/30 files (10%)" */
        at = (size_t)snprintf(line, sizeof line, "tensio %s: %llu/%llu %s (%.0f%%)", p->label,
                              (unsigned long long)p->done, (unsigned long long)p->total,
                              p->unit, 100.0 * (double)p->done / (double)p->total);
    else
        at = (size_t)snprintf(line, sizeof line, "tensio %s: %s", p->label, done);
    if (p->total && !p->unit && at < sizeof line) {
        human(total, sizeof total, (double)p->total, p->unit);
        at += (size_t)snprintf(line + at, sizeof line - at, " / %s (%.0f%%)", total,
                               100.0 * (double)p->done / (double)p->total);
    }
    if (at < sizeof line)
        at += (size_t)snprintf(line + at, sizeof line - at, "  %s/s", rate);
    if (p->total && p->done && p->done < p->total && !final && at < sizeof line) {
        double eta = el * (double)(p->total - p->done) / (double)p->done;
        snprintf(line + at, sizeof line - at, "  ETA %.0fs", eta);
    }
    if (p->tty)
        fprintf(stderr, "\r\033[K%s", line);
    else
        fprintf(stderr, "%s\n", line);
    fflush(stderr);
    p->drawn = 1;
    p->last = t;
    p->shown = p->done;
}

void cli_progress_update(cli_progress *p, uint64_t done, uint64_t total) {
    p->done = done;
    p->total = total;
    if (p->mode == CLI_PROGRESS_OFF || done == 0) return; /* nothing done: nothing to say */
    if (p->mode == CLI_PROGRESS_AUTO && !p->tty) return;
    double t = now();
    if (p->mode == CLI_PROGRESS_AUTO && t - p->start < DELAY) return;
    double every = p->tty ? REDRAW : LOG_EVERY;
    if (p->last >= 0 && t - p->last < every) return;
    draw(p, t, 0);
}

void cli_progress_cb(void *ctx, uint64_t done, uint64_t total) {
    cli_progress_update(ctx, done, total);
}

void cli_progress_pause(cli_progress *p) {
    if (p && p->tty && p->drawn) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
        p->drawn = 0;
        p->last = -1;
    }
}

void cli_progress_end(cli_progress *p) {
    if (p->mode == CLI_PROGRESS_OFF) return;
    if (p->tty) {
        if (p->drawn) {
            fputs("\r\033[K", stderr); /* the line goes; the result stays */
            fflush(stderr);
        }
        return;
    }
    /* a log gets the last count, unless its last line has it */
    if (p->mode == CLI_PROGRESS_ON && (!p->drawn || p->shown != p->done)) draw(p, now(), 1);
}
