/*
 * The default durability of the files `tensio recv -o` writes: each is saved
 * without an fsync (TIO_SAVE_NO_SYNC: atomic, not durable), and the file
 * systems they are on are synced with one syncfs() each by a thread of its
 * own: at least once a second while files are written, at once when asked
 * (the stream paused), and at the end. On that thread a sync that waits for
 * the disk, or for other programs' dirty data on the same file system, never
 * holds up receiving.
 */
#ifndef TENSIO_RECV_SYNC_H
#define TENSIO_RECV_SYNC_H

typedef struct recv_syncer recv_syncer;

/* Starts the thread. CLI_EXIT_OK, or CLI_EXIT_FAIL (printed). */
int recv_syncer_start(recv_syncer **out);
/* Before the first file in directory `dir`: keeps a descriptor of it when it
 * is on a file system not seen yet (opened now, so that syncfs reports any
 * write-back error from here on). CLI_EXIT_OK or CLI_EXIT_FAIL (printed). */
int recv_syncer_track(recv_syncer *s, const char *dir);
/* After each file saved. */
void recv_syncer_saved(recv_syncer *s);
/* Syncs what was saved at once (the stream paused). */
void recv_syncer_kick(recv_syncer *s);
/* Whether a sync failed (the thread printed why). */
int recv_syncer_failed(recv_syncer *s);
/* Syncs what is left, stops the thread and frees everything (NULL is fine).
 * CLI_EXIT_OK, or CLI_EXIT_FAIL when any sync failed. */
int recv_syncer_finish(recv_syncer *s);

#endif /* TENSIO_RECV_SYNC_H */
