/* ls, dump, validate and convert on LMDB stores of tensors (tio_lmdb_*). */
#include "cli.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The key's bytes, NUL-terminated (for the _n helpers, which read s[len]);
 * a NUL inside is kept: show it with key_shown, never as a C string. */
static char *key_string(const tio_lmdb_record *r) {
    char *k = malloc(r->key_size + 1);
    if (!k) return NULL;
    memcpy(k, r->key, r->key_size);
    k[r->key_size] = 0;
    return k;
}

/* The key for a terminal: every byte, a NUL as \x00 (cli_bytes_escape). */
static char *key_shown(const tio_lmdb_record *r) {
    return cli_bytes_escape((const char *)r->key, r->key_size);
}

static void report(const char *path, const tio_error *err) {
    const char *msg = cli_errmsg(err);
    char *em = cli_text_escape(msg);
    /* the library's messages name the store already */
    cli_error("%s", em ? em : msg);
    (void)path;
    free(em);
}

static int open_store(const char *path, tio_lmdb **db, tio_lmdb_txn **txn) {
    tio_error err;
    tio_error_clear(&err);
    *txn = NULL;
    tio_limits lim; /* for its records: the store keeps a copy */
    tio_lmdb_options lo = {.limits = cli_limits(NULL, &lim)};
    if (tio_lmdb_open(path, &lo, db, &err) != TIO_OK ||
        tio_lmdb_read_begin(*db, txn, &err) != TIO_OK) {
        report(path, &err);
        tio_lmdb_close(*db);
        *db = NULL;
        return CLI_EXIT_FAIL;
    }
    return CLI_EXIT_OK;
}

static void close_store(tio_lmdb *db, tio_lmdb_txn *txn) {
    tio_lmdb_read_end(txn);
    tio_lmdb_close(db);
}

/* ------------------------------------------------------------------- ls */

static int ls_record_text(cli_table *tab, const char *ek, const tio_container *c,
                          cli_hash_run *h, const char *label) {
    size_t nt = tio_container_count(c);
    int rc = CLI_EXIT_OK;
    for (size_t t = 0; t < nt && rc == CLI_EXIT_OK; t++) {
        cli_table_add(tab, "%s", ek);
        rc = cli_table_tensor(tab, t, tio_container_tensor(c, t));
        if (rc == CLI_EXIT_OK && h->on) cli_hash_cell(tab, h, label, c, t);
    }
    return rc;
}

static json_t *tensors_json(const char *key, size_t key_size, const tio_container *c,
                            cli_hash_run *h, const char *label) {
    json_t *arr = json_array();
    for (size_t t = 0; arr && t < tio_container_count(c); t++) {
        const tio_tensor *x = tio_container_tensor(c, t);
        json_t *o = json_object();
        int bad = !o || json_array_append_new(arr, o) != 0;
        if (!bad) {
            bad |= cli_json_set(o, "key", cli_json_strn(key, key_size));
            bad |= cli_json_set(o, "index", json_integer((json_int_t)t));
            bad |= cli_json_set(o, "name", cli_json_str(tio_tensor_name(x)));
            bad |= cli_json_set(o, "dtype", cli_json_str(cli_tensor_dtype_name(x)));
            bad |= cli_json_set(o, "shape", cli_json_shape(x));
            bad |= cli_json_set(o, "nbytes", json_integer((json_int_t)tio_tensor_nbytes(x)));
            if (!bad && h->on) bad |= cli_hash_keys(o, h, label, c, t);
        }
        if (bad) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

int cli_lmdb_ls(const char *path, int tensors, int json, int hash, const tio_limits *lim,
                const cli_filter *f) {
    cli_select sel;
    cli_select_init(&sel, f);
    tio_lmdb *db;
    tio_lmdb_txn *txn;
    int rc = open_store(path, &db, &txn);
    if (rc != CLI_EXIT_OK) return rc;
    cli_hash_run h;
    memset(&h, 0, sizeof h);
    h.on = hash;
    tensors |= hash; /* the records' tensors, hashed */
    cli_table tab;
    size_t ncols = tensors ? (hash ? 7u : 6u) : 2u;
    cli_table_init(&tab, ncols, tensors ? (1u << 1 | 1u << 5) : 1u << 1);
    if (tensors) {
        const char *heads[] = {"KEY", "INDEX", "NAME", "DTYPE", "SHAPE", "NBYTES", "SHA256"};
        for (size_t k = 0; k < ncols; k++) cli_table_add(&tab, "%s", heads[k]);
    } else {
        cli_table_add(&tab, "KEY");
        cli_table_add(&tab, "BYTES");
    }
    json_t *root = json ? json_object() : NULL, *keys = json ? json_array() : NULL;
    json_t *tens = json && tensors ? json_array() : NULL;
    if (json) {
        int bad = !root || !keys || (tensors && !tens);
        bad |= cli_json_set(root, "file", cli_json_str(path));
        bad |= cli_json_set(root, "format", json_string("lmdb"));
        bad |= cli_json_set(root, "record_format", cli_json_str(tio_lmdb_format(db)));
        bad |= cli_json_set(root, "records", json_integer((json_int_t)tio_lmdb_count(txn)));
        bad |= cli_json_set(root, "keys", keys);
        if (tensors) bad |= cli_json_set(root, "tensors", tens);
        if (bad) rc = cli_error("out of memory");
    }
    int failed = 0;
    tio_lmdb_record r;
    tio_error err;
    tio_error_clear(&err);
    tio_limits lbuf;
    while (rc == CLI_EXIT_OK && tio_lmdb_next(txn, &r, &err) == TIO_OK) {
        char *key = key_string(&r), *ek = key_shown(&r);
        if (!key || !ek) {
            free(key);
            free(ek);
            rc = cli_error("out of memory");
            break;
        }
        /* the globs see the key as shown (a NUL as \x00); a renamed key is
         * shown and listed as its NEW */
        const char *as;
        size_t klen = r.key_size;
        if (!cli_select_name(&sel, ek, ek, &as)) {
            free(key);
            free(ek);
            continue;
        }
        if (as != ek) {
            char *nk = strdup(as), *nk2 = strdup(as);
            free(key);
            free(ek);
            klen = strlen(as);
            key = nk;
            ek = nk2;
            if (!key || !ek) {
                free(key);
                free(ek);
                rc = cli_error("out of memory");
                break;
            }
        }
        tio_container *c = NULL;
        tio_open_options oo;
        memset(&oo, 0, sizeof oo);
        oo.limits = cli_limits(lim, &lbuf); /* --max-dense-bytes, TENSIO_LIMITS */
        if (tensors && tio_lmdb_open_record(txn, &r, &oo, &c, &err) != TIO_OK) {
            report(path, &err);
            failed = 1;
        }
        char *label = c && hash ? cli_escaped_pair(path, ": key ", ek) : NULL;
        if (c && hash && !label) {
            tio_container_free(c);
            free(key);
            free(ek);
            rc = cli_error("out of memory");
            break;
        }
        if (json) {
            json_t *o = json_object();
            int bad = !o || json_array_append_new(keys, o) != 0;
            bad |= cli_json_set(o, "key", cli_json_strn(key, klen)); /* NUL: \u0000 */
            bad |= cli_json_set(o, "size", json_integer((json_int_t)r.size));
            if (c) {
                json_t *a = tensors_json(key, klen, c, &h, label);
                bad |= !a || json_array_extend(tens, a) != 0;
                json_decref(a);
            }
            if (bad) rc = cli_error("out of memory");
        } else if (tensors) {
            if (c) rc = ls_record_text(&tab, ek, c, &h, label);
        } else {
            cli_table_add(&tab, "%s", ek);
            cli_table_add(&tab, "%zu", r.size);
        }
        tio_container_free(c);
        free(label);
        free(ek);
        free(key);
    }
    if (rc == CLI_EXIT_OK && err.code != TIO_E_NOT_FOUND) {
        report(path, &err);
        failed = 1;
    }
    if (rc == CLI_EXIT_OK) rc = cli_select_end(&sel, "key");
    if (rc == CLI_EXIT_OK) rc = json ? cli_json_print(root) : cli_table_print(&tab, stdout);
    else json_decref(root);
    cli_table_free(&tab);
    close_store(db, txn);
    return rc == CLI_EXIT_OK && (failed || h.missing) ? CLI_EXIT_FAIL : rc;
}

/* ----------------------------------------------------------------- info */

int cli_lmdb_info(const char *path, int json) {
    tio_lmdb *db;
    tio_lmdb_txn *txn;
    int rc = open_store(path, &db, &txn);
    if (rc != CLI_EXIT_OK) return rc;
    uint64_t records = 0, record_bytes = 0, tensors = 0, tensor_bytes = 0, bad = 0;
    tio_lmdb_record r;
    tio_error err;
    tio_error_clear(&err);
    while (tio_lmdb_next(txn, &r, &err) == TIO_OK) {
        records++;
        record_bytes += r.size;
        tio_container *c = NULL;
        if (tio_lmdb_open_record(txn, &r, NULL, &c, &err) != TIO_OK) {
            report(path, &err);
            bad++;
            continue;
        }
        for (size_t t = 0; t < tio_container_count(c); t++)
            tensor_bytes += tio_tensor_nbytes(tio_container_tensor(c, t));
        tensors += tio_container_count(c);
        tio_container_free(c);
    }
    if (err.code != TIO_E_NOT_FOUND) {
        report(path, &err);
        bad++;
    }
    const char *rf = tio_lmdb_format(db);
    if (json) {
        json_t *o = json_object();
        int nomem = !o;
        nomem |= cli_json_set(o, "file", cli_json_str(path));
        nomem |= cli_json_set(o, "format", json_string("lmdb"));
        nomem |= cli_json_set(o, "record_format", cli_json_str(rf));
        nomem |= cli_json_set(o, "records", json_integer((json_int_t)records));
        nomem |= cli_json_set(o, "record_bytes", json_integer((json_int_t)record_bytes));
        nomem |= cli_json_set(o, "tensors", json_integer((json_int_t)tensors));
        nomem |= cli_json_set(o, "tensor_bytes", json_integer((json_int_t)tensor_bytes));
        nomem |= cli_json_set(o, "undecodable_records", json_integer((json_int_t)bad));
        rc = nomem ? (json_decref(o), cli_error("out of memory")) : cli_json_print(o);
    } else {
        char *ep = cli_text_escape(path);
        printf("file: %s\nformat: lmdb (records: %s)\nrecords: %llu, %llu bytes\n"
               "tensors: %llu, %llu bytes\n",
               ep ? ep : path, rf ? rf : "format probed per record",
               (unsigned long long)records, (unsigned long long)record_bytes,
               (unsigned long long)tensors, (unsigned long long)tensor_bytes);
        if (bad) printf("undecodable records: %llu\n", (unsigned long long)bad);
        free(ep);
    }
    close_store(db, txn);
    return rc == CLI_EXIT_OK && bad ? CLI_EXIT_FAIL : rc;
}

/* ----------------------------------------------------------------- dump */

int cli_lmdb_open_record(const char *path, const char *key, tio_container **out) {
    tio_lmdb *db;
    tio_lmdb_txn *txn;
    int rc = open_store(path, &db, &txn);
    if (rc != CLI_EXIT_OK) return rc;
    tio_error err;
    tio_error_clear(&err);
    int got = tio_lmdb_get(txn, key, strlen(key), NULL, out, &err);
    if (got == TIO_E_NOT_FOUND) { /* KEY as `ls` shows it: \xNN for a byte (a NUL) */
        size_t n = 0;
        char *raw = cli_bytes_unescape(key, &n);
        if (!raw) {
            close_store(db, txn);
            return cli_error("out of memory");
        }
        if (n != strlen(key) || memcmp(raw, key, n) != 0) {
            tio_error e2;
            tio_error_clear(&e2);
            got = tio_lmdb_get(txn, raw, n, NULL, out, &e2);
            err = e2; /* names the key as typed (its bytes escaped as ls shows them) */
        }
        free(raw);
    }
    if (got != TIO_OK) {
        report(path, &err);
        rc = CLI_EXIT_FAIL;
    }
    close_store(db, txn); /* the container holds the transaction and the store */
    return rc;
}

/* ------------------------------------------------------------- validate */


size_t cli_lmdb_validate(const char *path, int verbose, json_t *files) {
    json_t *errors = NULL, *fo = files ? cli_validate_json_file(files, path, &errors) : NULL;
    if (files) {
        if (!fo) return 1;
        cli_json_set(fo, "format", json_string("lmdb"));
        cli_json_set(fo, "errors", errors);
    }
    tio_lmdb *db = NULL;
    tio_lmdb_txn *txn = NULL;
    tio_error err;
    tio_error_clear(&err);
    tio_limits lim;
    tio_lmdb_options lo = {.limits = cli_limits(NULL, &lim)};
    if (tio_lmdb_open(path, &lo, &db, &err) != TIO_OK ||
        tio_lmdb_read_begin(db, &txn, &err) != TIO_OK) {
        cli_validate_finding(path, errors, &err);
        tio_lmdb_close(db);
        if (fo) {
            cli_json_set(fo, "valid", json_false());
            cli_json_set(fo, "tensors", json_null());
        }
        return 1;
    }
    size_t problems = 0, ntensors = 0, nrecords = 0;
    tio_lmdb_record r;
    tio_open_options o;
    memset(&o, 0, sizeof o);
    while (tio_lmdb_next(txn, &r, &err) == TIO_OK) {
        nrecords++;
        tio_container *c = NULL;
        if (tio_lmdb_open_record(txn, &r, &o, &c, &err) != TIO_OK) {
            cli_validate_finding(path, errors, &err);
            problems++;
            continue;
        }
        ntensors += tio_container_count(c);
        char *key = key_shown(&r);
        for (size_t w = 0; w < tio_container_warning_count(c); w++) {
            const tio_error *we = tio_container_warning(c, w);
            if (!we) continue;
            tio_error e = *we;
            snprintf(e.message, sizeof e.message, "record \"%.64s\": %s", key ? key : "?",
                     cli_errmsg(we));
            cli_validate_finding(path, errors, &e);
            problems++;
        }
        free(key);
        tio_container_free(c);
    }
    if (err.code != TIO_E_NOT_FOUND) { /* the walk itself failed */
        cli_validate_finding(path, errors, &err);
        problems++;
    }
    if (fo) {
        cli_json_set(fo, "valid", json_boolean(problems == 0));
        cli_json_set(fo, "records", json_integer((json_int_t)nrecords));
        cli_json_set(fo, "tensors", json_integer((json_int_t)ntensors));
    } else if (!problems && verbose) {
        char *ep = cli_text_escape(path);
        const char *rf = tio_lmdb_format(db);
        printf("%s: ok (lmdb, %s records: %zu record%s, %zu tensor%s)\n", ep ? ep : path,
               rf ? rf : "probed", nrecords, nrecords == 1 ? "" : "s", ntensors,
               ntensors == 1 ? "" : "s");
        free(ep);
    }
    close_store(db, txn);
    return problems;
}

/* -------------------------------------------------------------- convert */

typedef struct convert_state {
    tio_lmdb *db;
    int existed, force;
    size_t records, skipped;
} convert_state;

static int put_record(convert_state *s, const char *key, const tio_container *c) {
    tio_error err;
    tio_error_clear(&err);
    tio_lmdb_record r;
    tio_lmdb_txn *txn = NULL; /* a short snapshot: an open one would keep the map from growing */
    int there = !s->force && s->existed && tio_lmdb_read_begin(s->db, &txn, NULL) == TIO_OK &&
                tio_lmdb_find(txn, key, strlen(key), &r, NULL) == TIO_OK;
    tio_lmdb_read_end(txn);
    if (there) {
        char *ek = cli_text_escape(key);
        int rc = cli_error("key \"%s\" is in the store already (--force replaces it)",
                           ek ? ek : "?");
        free(ek);
        return rc;
    }
    if (tio_lmdb_put(s->db, key, strlen(key), c, &err) != TIO_OK) {
        char *ek = cli_text_escape(key);
        int rc = cli_error("record \"%s\": %s", ek ? ek : "?", cli_errmsg(&err));
        free(ek);
        return rc;
    }
    s->records++;
    return CLI_EXIT_OK;
}

/* One record per sample: the tensors of its tensor members, in member order. */
static int convert_shard(convert_state *s, const char *in, const cli_filter *f) {
    cli_select sel; /* --only/--exclude on member names */
    cli_select_init(&sel, f);
    tio_shard *sh = NULL;
    tio_error err;
    tio_error_clear(&err);
    tio_limits lim;
    if (tio_shard_open(in, cli_limits(NULL, &lim), &sh, &err) != TIO_OK) {
        report(in, &err);
        cli_limit_hint(&err);
        return CLI_EXIT_FAIL;
    }
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; rc == CLI_EXIT_OK && i < tio_shard_sample_count(sh); i++) {
        const tio_shard_sample *sm = tio_shard_sample_at(sh, i);
        if (sm->duplicate_of != TIO_SHARD_NONE && !s->force) {
            /* a second record under the key would replace the first one */
            char *ek = cli_text_escape(sm->key);
            rc = cli_error("%s: sample key \"%s\" comes twice in the shard (--force keeps "
                           "the last one)", in, ek ? ek : "?");
            free(ek);
            break;
        }
        tio_container **cs = calloc(sm->count ? sm->count : 1, sizeof *cs);
        const char **names = calloc(sm->count ? sm->count : 1, sizeof *names);
        size_t n = 0;
        if (!cs || !names) rc = cli_error("out of memory");
        for (size_t j = 0; rc == CLI_EXIT_OK && j < sm->count; j++) {
            size_t mi = tio_shard_sample_member(sh, i, j);
            const char *as;
            if (!cli_select_name(&sel, tio_shard_member_at(sh, mi)->name, NULL, &as)) continue;
            if (!tio_shard_member_format(sh, mi)) {
                s->skipped++;
                continue;
            }
            names[n] = tio_shard_member_at(sh, mi)->name;
            if (tio_shard_open_member(sh, mi, NULL, &cs[n], &err) != TIO_OK) {
                char *en = cli_text_escape(names[n]);
                rc = cli_error("%s: member %s: %s", in, en ? en : "?", cli_errmsg(&err));
                free(en);
                break;
            }
            n++;
        }
        tio_container *rec = NULL;
        if (rc == CLI_EXIT_OK && n == 1) {
            rec = cs[0];
            cs[0] = NULL;
        } else if (rc == CLI_EXIT_OK && n > 1) {
            cli_filter none;
            memset(&none, 0, sizeof none);
            rc = cli_join(cs, names, n, &none, 0, &rec); /* takes cs */
            n = 0;
        }
        if (rc == CLI_EXIT_OK && rec) rc = put_record(s, sm->key, rec);
        tio_container_free(rec);
        for (size_t j = 0; cs && j < n; j++) tio_container_free(cs[j]);
        free(cs);
        free(names);
    }
    tio_shard_free(sh);
    return rc == CLI_EXIT_OK ? cli_select_end(&sel, "member") : rc;
}

/* The key of a single file: its name without directory and extensions. */
static char *file_key(const char *path) {
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strcspn(b, ".");
    char *k = malloc(n + 1);
    if (k) {
        memcpy(k, b, n);
        k[n] = 0;
    }
    return k;
}

/* The first extension of a format, without the dot ("ten"), into buf. */
static const char *first_ext(const char *format, char *buf, size_t cap) {
    const char *e = format ? tio_format_extensions(format) : NULL;
    if (!e || !*e) return NULL;
    if (*e == '.') e++;
    size_t n = strcspn(e, " ,;");
    if (n == 0 || n >= cap) return NULL;
    memcpy(buf, e, n);
    buf[n] = 0;
    return buf;
}

/* db.lmdb -> shard.tar: a member "KEY.EXT" per record, in key order. The
 * record's bytes as stored (EXT from the store's format, or the format
 * probed for a store without metadata), or with `to` re-encoded in it. */
static int lmdb_to_tar(const char *in, const char *out, const char *to, unsigned save_flags,
                       int verbose, int json, const cli_filter *f) {
    cli_select sel; /* on the keys as shown; a renamed record's member is NEW.EXT */
    cli_select_init(&sel, f);
    tio_lmdb *db = NULL;
    tio_lmdb_txn *txn = NULL;
    int rc = open_store(in, &db, &txn);
    if (rc != CLI_EXIT_OK) return rc;
    tio_error err;
    tio_error_clear(&err);
    tio_shard_writer_options wo;
    memset(&wo, 0, sizeof wo);
    wo.flags = save_flags & TIO_SAVE_NO_SYNC;
    tio_shard_writer *w = NULL;
    if (tio_shard_writer_open(out, &wo, &w, &err) != TIO_OK) {
        report(out, &err);
        close_store(db, txn);
        return CLI_EXIT_FAIL;
    }
    tio_save_options so;
    memset(&so, 0, sizeof so);
    so.format = to;
    so.flags = save_flags & ~TIO_SAVE_NO_SYNC;
    tio_lmdb_record r;
    size_t records = 0;
    while (rc == CLI_EXIT_OK && tio_lmdb_next(txn, &r, &err) == TIO_OK) {
        char *key = key_string(&r);
        if (!key) {
            rc = cli_error("out of memory");
            break;
        }
        char *ek = key_shown(&r);
        const char *as = NULL;
        if (!ek) {
            free(key);
            rc = cli_error("out of memory");
            break;
        }
        if (!cli_select_name(&sel, ek, ek, &as)) {
            free(ek);
            free(key);
            continue;
        }
        if (as == ek && strlen(key) != r.key_size) {
            rc = cli_error("%s: key '%s' holds a NUL byte: no member name can hold it (--rename "
                           "it)", in, ek);
            free(ek);
            free(key);
            break;
        }
        if (as != ek) {
            char *nk = strdup(as);
            free(key);
            key = nk;
            if (!key) {
                free(ek);
                rc = cli_error("out of memory");
                break;
            }
        }
        free(ek);
        tio_container *c = NULL;
        const char *fmt = tio_lmdb_format(db);
        char ext[32], *name = NULL;
        if (to || !fmt) { /* decoded: to re-encode, or to learn its format */
            if (tio_lmdb_open_record(txn, &r, NULL, &c, &err) != TIO_OK) {
                report(in, &err);
                rc = CLI_EXIT_FAIL;
            } else {
                fmt = tio_container_format(c);
            }
        }
        if (rc == CLI_EXIT_OK && to) {
            if (tio_shard_writer_add_container(w, key, c, &so, NULL, &err) != TIO_OK) {
                report(out, &err);
                rc = CLI_EXIT_FAIL;
            }
        } else if (rc == CLI_EXIT_OK) {
            const char *e = first_ext(fmt, ext, sizeof ext);
            name = e ? cli_strdup_printf("%s.%s", key, e) : NULL;
            if (!name) {
                rc = cli_error("%s: record '%s': no extension for format %s", in, key,
                               fmt ? fmt : "?");
            } else if (tio_shard_writer_add_bytes(w, name, r.data, r.size, &err) != TIO_OK) {
                report(out, &err);
                rc = CLI_EXIT_FAIL;
            }
        }
        if (rc == CLI_EXIT_OK) records++;
        free(name);
        tio_container_free(c);
        free(key);
    }
    if (rc == CLI_EXIT_OK && err.code != TIO_OK && err.code != TIO_E_NOT_FOUND) {
        report(in, &err); /* the cursor failed */
        rc = CLI_EXIT_FAIL;
    }
    if (rc == CLI_EXIT_OK) rc = cli_select_end(&sel, "key");
    if (rc == CLI_EXIT_OK) {
        if (tio_shard_writer_close(w, &err) != TIO_OK) {
            report(out, &err);
            rc = CLI_EXIT_FAIL;
        }
    } else {
        tio_shard_writer_abort(w);
    }
    const char *rf = to ? to : tio_lmdb_format(db);
    if (rc == CLI_EXIT_OK && json) {
        json_t *o = json_object();
        int bad = !o;
        bad |= cli_json_set(o, "input", cli_json_str(in));
        bad |= cli_json_set(o, "input_format", json_string("lmdb"));
        bad |= cli_json_set(o, "output", cli_json_str(out));
        bad |= cli_json_set(o, "output_format", json_string("tar"));
        bad |= cli_json_set(o, "member_format", cli_json_str(rf));
        bad |= cli_json_set(o, "records", json_integer((json_int_t)records));
        rc = bad ? (json_decref(o), cli_error("out of memory")) : cli_json_print(o);
    } else if (rc == CLI_EXIT_OK && verbose) {
        char *ei = cli_text_escape(in), *eo = cli_text_escape(out);
        printf("%s (lmdb) -> %s (tar): %zu member%s (%s)\n", ei ? ei : in, eo ? eo : out,
               records, records == 1 ? "" : "s", rf ? rf : "each record's format");
        free(ei);
        free(eo);
    }
    close_store(db, txn);
    return rc;
}

int cli_lmdb_convert(const char *in, const char *from, const char *out, const char *to,
                     unsigned save_flags, int force, int verbose, int json,
                     const cli_filter *f) {
    if (cli_is_lmdb(in)) {
        if (cli_is_lmdb(out))
            return cli_error("%s: LMDB to LMDB is not supported (mdb_copy copies a store)", in);
        if (!cli_is_shard_name(out))
            return cli_error("%s: an LMDB store converts to a tar shard (OUT.tar)", in);
        struct stat ost;
        if (!force && stat(out, &ost) == 0)
            return cli_error("%s: already exists (use --force to overwrite)", out);
        return lmdb_to_tar(in, out, to, save_flags, verbose, json, f);
    }
    if (f && f->nrename && cli_is_shard(in, from))
        return cli_usage_error("convert", "--rename: a shard's member names are not kept in "
                               "LMDB records (their keys are the samples')");
    struct stat st;
    int existed = stat(out, &st) == 0;
    tio_save_options so;
    memset(&so, 0, sizeof so);
    so.flags = save_flags;
    tio_lmdb_options lo;
    memset(&lo, 0, sizeof lo);
    lo.flags = TIO_LMDB_WRITE;
    lo.format = to;
    lo.save = &so;
    convert_state s;
    memset(&s, 0, sizeof s);
    s.force = force;
    tio_error err;
    tio_error_clear(&err);
    if (tio_lmdb_open(out, &lo, &s.db, &err) != TIO_OK) {
        report(out, &err);
        return CLI_EXIT_FAIL;
    }
    s.existed = existed;
    int rc;
    const char *src = "tar";
    if (cli_is_shard(in, from)) {
        rc = convert_shard(&s, in, f);
    } else {
        tio_container *c = NULL;
        char *key = file_key(in);
        rc = key && key[0] ? cli_open(in, from, NULL, &c)
                           : cli_error("%s: no key in the file's name", in);
        src = c ? tio_container_format(c) : "?";
        if (rc == CLI_EXIT_OK && f) rc = cli_filter_apply(f, in, &c); /* its tensors */
        if (rc == CLI_EXIT_OK) rc = put_record(&s, key, c);
        tio_container_free(c);
        free(key);
    }
    if (rc == CLI_EXIT_OK && tio_lmdb_commit(s.db, &err) != TIO_OK) {
        report(out, &err);
        rc = CLI_EXIT_FAIL;
    }
    const char *rf = tio_lmdb_format(s.db);
    if (rc == CLI_EXIT_OK && json) {
        json_t *o = json_object();
        int bad = !o;
        bad |= cli_json_set(o, "input", cli_json_str(in));
        bad |= cli_json_set(o, "input_format", cli_json_str(src));
        bad |= cli_json_set(o, "output", cli_json_str(out));
        bad |= cli_json_set(o, "output_format", json_string("lmdb"));
        bad |= cli_json_set(o, "record_format", cli_json_str(rf));
        bad |= cli_json_set(o, "records", json_integer((json_int_t)s.records));
        bad |= cli_json_set(o, "skipped_members", json_integer((json_int_t)s.skipped));
        rc = bad ? (json_decref(o), cli_error("out of memory")) : cli_json_print(o);
    } else if (rc == CLI_EXIT_OK && verbose) {
        char *ei = cli_text_escape(in), *eo = cli_text_escape(out);
        printf("%s (%s) -> %s (lmdb, %s records): %zu record%s written\n", ei ? ei : in, src,
               eo ? eo : out, rf ? rf : "?", s.records, s.records == 1 ? "" : "s");
        free(ei);
        free(eo);
    }
    if (rc == CLI_EXIT_OK && s.skipped)
        fprintf(stderr,
                "tensio: %zu member%s without a tensor format (.cls, .json ...) not stored: an "
                "LMDB record holds a sample's tensors only\n",
                s.skipped, s.skipped == 1 ? "" : "s");
    tio_lmdb_close(s.db);
    return rc;
}
