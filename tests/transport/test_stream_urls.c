/* Stream URLs: tio_stream_open's parsing (schemes, tensorcom's URL forms,
 * several endpoints, topics), what it refuses and which roles each socket
 * type takes, tensorcom URLs end to end, and the protocol option. Every
 * receive is bounded by a timeout. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stream_util.h"
#include "transport/transport.h"

/* ------------------------------------------------------------------ URLs */

typedef struct url_case {
    const char *url;
    tio_socket_type socket;
    int bind;
    int tensorcom;
    const char *endpoints[4];
    const char *topic;
} url_case;

static void test_url_parse(void **state) {
    (void)state;
    static const url_case cases[] = {
        {"zpush://host:7880", TIO_SOCKET_PUSH, 0, 1, {"tcp://host:7880"}, NULL},
        {"zpull://*:7880", TIO_SOCKET_PULL, 1, 1, {"tcp://*:7880"}, NULL},
        {"zpub://127.0.0.1:7881", TIO_SOCKET_PUB, 1, 1, {"tcp://127.0.0.1:7881"}, NULL},
        {"zsub://h:1#topic", TIO_SOCKET_SUB, 0, 1, {"tcp://h:1"}, "topic"},
        {"zrpush://*:2", TIO_SOCKET_PUSH, 1, 1, {"tcp://*:2"}, NULL},
        {"zrpull://h:2", TIO_SOCKET_PULL, 0, 1, {"tcp://h:2"}, NULL},
        {"zrpub://h:3", TIO_SOCKET_PUB, 0, 1, {"tcp://h:3"}, NULL},
        {"zrsub://*:3#", TIO_SOCKET_SUB, 1, 1, {"tcp://*:3"}, ""},
        {"ZPUSH://h:4/ignored/path?q=1", TIO_SOCKET_PUSH, 0, 1, {"tcp://h:4"}, NULL},
        {"zpush+ipc:///tmp/tio.sock", TIO_SOCKET_PUSH, 0, 1, {"ipc:///tmp/tio.sock"}, NULL},
        {"zpull+ipc://rel.sock#x", TIO_SOCKET_PULL, 1, 1, {"ipc://rel.sock"}, "x"},
        {"zsub+tcp://h:5#f4", TIO_SOCKET_SUB, 0, 1, {"tcp://h:5"}, "f4"},
        {"zpush+inproc://name", TIO_SOCKET_PUSH, 0, 1, {"inproc://name"}, NULL},
        {"tcp://127.0.0.1:5555", TIO_SOCKET_DEFAULT, -1, 0, {"tcp://127.0.0.1:5555"}, NULL},
        {"ipc:///tmp/x", TIO_SOCKET_DEFAULT, -1, 0, {"ipc:///tmp/x"}, NULL},
        {"inproc://abc#t", TIO_SOCKET_DEFAULT, -1, 0, {"inproc://abc"}, "t"},
        {"zpush://h:{1,2,3}", TIO_SOCKET_PUSH, 0, 1, {"tcp://h:1", "tcp://h:2", "tcp://h:3"}, NULL},
        {"zpush://h:78{1..3}", TIO_SOCKET_PUSH, 0, 1, {"tcp://h:781", "tcp://h:782", "tcp://h:783"}, NULL},
        {"tcp://{a,b}:{1,2}", TIO_SOCKET_DEFAULT, -1, 0,
         {"tcp://a:1", "tcp://a:2", "tcp://b:1", "tcp://b:2"}, NULL},
        {"tcp://h:{08..10}", TIO_SOCKET_DEFAULT, -1, 0, {"tcp://h:08", "tcp://h:09", "tcp://h:10"}, NULL},
        {"tcp://h:{3..1}", TIO_SOCKET_DEFAULT, -1, 0, {"tcp://h:3", "tcp://h:2", "tcp://h:1"}, NULL},
        {"tcp://h:{1..7..3}", TIO_SOCKET_DEFAULT, -1, 0, {"tcp://h:1", "tcp://h:4", "tcp://h:7"}, NULL},
        {"inproc://{a..c}", TIO_SOCKET_DEFAULT, -1, 0, {"inproc://a", "inproc://b", "inproc://c"}, NULL},
        {"inproc://x{a,b{1,2}}", TIO_SOCKET_DEFAULT, -1, 0,
         {"inproc://xa", "inproc://xb1", "inproc://xb2"}, NULL},
        {"inproc://{lit}", TIO_SOCKET_DEFAULT, -1, 0, {"inproc://{lit}"}, NULL},
        {"inproc://{open", TIO_SOCKET_DEFAULT, -1, 0, {"inproc://{open"}, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const url_case *k = &cases[i];
        tio_url u;
        tio_error err;
        int rc = tio__url_parse(k->url, &u, &err);
        ASSERT_OK(rc, err, k->url);
        assert_int_equal(u.socket, k->socket);
        assert_int_equal(u.bind, k->bind);
        assert_int_equal(u.tensorcom, k->tensorcom);
        size_t n = 0;
        while (n < 4 && k->endpoints[n]) n++;
        if (u.count != n) fprintf(stderr, "%s: %zu endpoints\n", k->url, u.count);
        assert_int_equal(u.count, n);
        for (size_t j = 0; j < n; j++) assert_string_equal(u.endpoints[j], k->endpoints[j]);
        if (k->topic) assert_string_equal(u.topic, k->topic);
        else assert_null(u.topic);
        tio__url_free(&u);
    }

    static const char *bad[] = {
        "", "nothing", "://x", "http://h:1", "udp://h:1", "zpush://", "zpush:///path",
        "zpush+udp://h:1", "zpushx://h:1", "tcp://", "zsub+ipc://#t",
        "inproc://{,x}",             /* expands to an address-less endpoint */
        "{zpush,zpull}://h:1",       /* two socket types in one stream */
        "zsub://h:{1,2}#{a,b}",      /* two topics */
        "tcp://h:{1..1000}",         /* more than 256 endpoints */
        "tcp://{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}", /* 512 */
        "tcp://h:{1..99999999999999999}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tio_url u;
        tio_error err;
        ASSERT_CODE(tio__url_parse(bad[i], &u, &err), TIO_E_ARGUMENT, err, bad[i]);
        assert_int_equal(u.count, 0);
        assert_null(u.endpoints);
    }
    /* too long */
    size_t n = TIO_URL_MAX + 10;
    char *longurl = malloc(n + 1);
    memcpy(longurl, "tcp://", 6);
    memset(longurl + 6, 'a', n - 6);
    longurl[n] = 0;
    tio_url u;
    tio_error err;
    ASSERT_CODE(tio__url_parse(longurl, &u, &err), TIO_E_ARGUMENT, err, "long");
    tio_stream *s = NULL;
    ASSERT_CODE(tio_stream_open(longurl, NULL, &s, &err), TIO_E_ARGUMENT, err, "long open");
    assert_null(s);
    free(longurl);
    /* brace groups: 20 in a row are fine, 40 exceed the recursion bound */
    char groups[512] = "inproc://";
    for (int i = 0; i < 20; i++) strcat(groups, "{a..a}");
    ASSERT_OK(tio__url_parse(groups, &u, &err), err, "20 groups");
    assert_int_equal(u.count, 1);
    assert_int_equal(strlen(u.endpoints[0]), 9 + 20);
    tio__url_free(&u);
    for (int i = 0; i < 20; i++) strcat(groups, "{a..a}");
    ASSERT_CODE(tio__url_parse(groups, &u, &err), TIO_E_ARGUMENT, err, "40 groups");
    /* exactly 256 is fine */
    ASSERT_OK(tio__url_parse("inproc://x{1..256}", &u, &err), err, "256");
    assert_int_equal(u.count, 256);
    assert_string_equal(u.endpoints[255], "inproc://x256");
    tio__url_free(&u);
}

/* Opening: the scheme decides the socket type and role; the flags force a
 * role; a contradicting socket type, a bad URL or a failing bind are errors. */
static void test_open_errors_and_roles(void **state) {
    (void)state;
    tio_stream *s = NULL;
    tio_error err;
    tio_stream_options o = sopts(TIO_SOCKET_PUSH, 0);
    ASSERT_CODE(tio_stream_open("zpull://127.0.0.1:*", &o, &s, &err), TIO_E_ARGUMENT, err,
                "contradicting socket");
    assert_null(s);
    assert_non_null(strstr(err.message, "PUSH"));
    ASSERT_CODE(tio_stream_open("tcp://127.0.0.1:5", NULL, &s, &err), TIO_E_ARGUMENT, err,
                "no socket type");
    ASSERT_CODE(tio_stream_open("http://x", &o, &s, &err), TIO_E_ARGUMENT, err, "bad scheme");
    ASSERT_CODE(tio_stream_open(NULL, &o, &s, &err), TIO_E_ARGUMENT, err, "NULL");
    o.flags = TIO_STREAM_BIND | TIO_STREAM_CONNECT;
    ASSERT_CODE(tio_stream_open("tcp://127.0.0.1:*", &o, &s, &err), TIO_E_ARGUMENT, err,
                "both roles");
    o.flags = 0;
    o.socket = (tio_socket_type)42;
    ASSERT_CODE(tio_stream_open("tcp://127.0.0.1:1", &o, &s, &err), TIO_E_ARGUMENT, err,
                "socket 42");

    o = sopts(TIO_SOCKET_PUSH, 0);
    o.hwm = -1;
    ASSERT_CODE(tio_stream_open("tcp://127.0.0.1:1", &o, &s, &err), TIO_E_ARGUMENT, err, "hwm");
    o.hwm = 0;
    o.identity = "";
    ASSERT_CODE(tio_stream_open("tcp://127.0.0.1:1", &o, &s, &err), TIO_E_ARGUMENT, err,
                "empty identity");
    o.identity = NULL;
    o.flags = 0x100;
    ASSERT_CODE(tio_stream_open("tcp://127.0.0.1:1", &o, &s, &err), TIO_E_ARGUMENT, err,
                "unknown flag");
    /* options libzmq accepts: connecting needs no peer */
    o = sopts(TIO_SOCKET_DEALER, 0);
    o.hwm = 10;
    o.linger_ms = -1;
    o.identity = "id";
    s = xopen("tcp://127.0.0.1:1", &o);
    assert_string_equal(tio_stream_endpoint(s), "tcp://127.0.0.1:1");
    tio_stream_close(s, NULL);
    s = NULL;

    /* zpull binds (port * resolved); the same socket type given explicitly is fine */
    o = sopts(TIO_SOCKET_PULL, 0);
    tio_stream *pull = xopen("zpull://127.0.0.1:*", &o);
    const char *ep = tio_stream_endpoint(pull);
    assert_true(strncmp(ep, "tcp://127.0.0.1:", 16) == 0 && atoi(ep + 16) > 0);
    /* binding the same port again fails with the endpoint in the message */
    char again[64];
    snprintf(again, sizeof again, "zpull://%s", ep + 6);
    ASSERT_CODE(tio_stream_open(again, &o, &s, &err), TIO_E_TRANSPORT, err, "bind twice");
    assert_non_null(strstr(err.message, ep + 6));
    assert_null(s);
    /* zrpull connects */
    tio_stream *rpull = xopen(again + 0, &(tio_stream_options){.socket = TIO_SOCKET_PULL,
                                                              .flags = TIO_STREAM_CONNECT});
    assert_string_equal(tio_stream_endpoint(rpull), ep);
    tio_stream_close(rpull, NULL);
    snprintf(again, sizeof again, "zrpull://%s", ep + 6);
    rpull = xopen(again, NULL);
    assert_string_equal(tio_stream_endpoint(rpull), ep); /* connected: as written */
    tio_stream_close(rpull, NULL);
    /* a bad address for libzmq */
    o = sopts(TIO_SOCKET_PUSH, 0);
    ASSERT_CODE(tio_stream_open("tcp://no-port-here", &o, &s, &err), TIO_E_TRANSPORT, err,
                "connect without port");
    assert_non_null(strstr(err.message, "tcp://no-port-here"));

    /* a direction the socket does not have */
    tio_container *c = open_vec("btf/dense_int8.btf");
    ASSERT_CODE(tio_stream_send(pull, c, NULL, &err), TIO_E_ARGUMENT, err, "send on PULL");
    tio_stream *push = xopen(ep, &o);
    tio_container *got = NULL;
    ASSERT_CODE(tio_stream_recv(push, &got, &err), TIO_E_ARGUMENT, err, "recv on PUSH");
    ASSERT_CODE(tio_stream_wait_subscribers(push, 1, 10, &err), TIO_E_ARGUMENT, err, "wait");
    ASSERT_CODE(tio_stream_set_peer(push, "x", 1, &err), TIO_E_ARGUMENT, err, "set_peer");
    tio_container_free(c);
    tio_stream_close(push, NULL);
    tio_stream_close(pull, NULL);
    tio_stream_close(NULL, NULL);
    assert_null(tio_stream_endpoint(NULL));
}

/* tensorcom URLs end to end: zpull/zpush (default format: tensorcom), the
 * reversed roles, +ipc, braces over two publishers, and a SUB #topic. */
static void test_tensorcom_urls(void **state) {
    (void)state;
    tio_container *src = open_vec("zio/tensorcom/tb_f32_3d_i16_2d.ten");
    tio_stream_options o;
    memset(&o, 0, sizeof o);
    o.timeout_ms = TMO;

    /* zpull binds, zpush connects; AUTO sends tensorcom multipart */
    tio_stream *pull = xopen("zpull://127.0.0.1:*", &o);
    char url[256];
    snprintf(url, sizeof url, "zpush://%s", tio_stream_endpoint(pull) + 6);
    tio_stream *push = xopen(url, &o);
    xsend(push, src, NULL);
    tio_container *got = xrecv(pull);
    assert_same_tensors(src, got);
    assert_prop(got, "proto", "tensorcom");
    assert_prop(got, "frames", "4");
    tio_container_free(got);
    tio_stream_close(push, NULL);
    tio_stream_close(pull, NULL);

    /* +ipc, reversed roles: zrpush binds, zrpull connects */
    snprintf(url, sizeof url, "zrpush+ipc:///tmp/tio-test-stream-%d.sock", (int)getpid());
    push = xopen(url, &o);
    snprintf(url, sizeof url, "zrpull+ipc:///tmp/tio-test-stream-%d.sock", (int)getpid());
    pull = xopen(url, &o);
    snprintf(url, sizeof url, "ipc:///tmp/tio-test-stream-%d.sock", (int)getpid());
    assert_string_equal(tio_stream_endpoint(push), url);
    xsend(push, src, NULL);
    got = xrecv(pull);
    assert_same_tensors(src, got);
    tio_container_free(got);
    tio_stream_close(pull, NULL);
    tio_stream_close(push, NULL);

    /* braces: one SUB connects to two publishers */
    tio_stream *pub1 = xopen("zpub://127.0.0.1:*", &o);
    tio_stream *pub2 = xopen("zpub://127.0.0.1:*", &o);
    int p1 = atoi(tio_stream_endpoint(pub1) + 16), p2 = atoi(tio_stream_endpoint(pub2) + 16);
    snprintf(url, sizeof url, "zsub://127.0.0.1:{%d,%d}", p1, p2);
    tio_stream *sub = xopen(url, &o);
    tio_error err;
    ASSERT_OK(tio_stream_wait_subscribers(pub1, 1, TMO, &err), err, "pub1");
    ASSERT_OK(tio_stream_wait_subscribers(pub2, 1, TMO, &err), err, "pub2");
    xsend(pub1, src, NULL);
    got = xrecv(sub);
    assert_same_tensors(src, got);
    tio_container_free(got);
    xsend(pub2, src, NULL);
    got = xrecv(sub);
    assert_same_tensors(src, got);
    tio_container_free(got);
    tio_stream_close(sub, NULL);

    /* #topic: tensorcom frames start with the dtype code, so "f4" passes the
     * float32-first batch and "i2" filters it out */
    snprintf(url, sizeof url, "zsub://127.0.0.1:%d#i2", p1);
    tio_stream_options so = o;
    so.timeout_ms = 300;
    tio_stream *sub_i2 = xopen(url, &so);
    snprintf(url, sizeof url, "zsub://127.0.0.1:%d#f4", p1);
    tio_stream *sub_f4 = xopen(url, &so);
    ASSERT_OK(tio_stream_wait_subscribers(pub1, 3, TMO, &err), err, "2 more");
    xsend(pub1, src, NULL);
    got = xrecv(sub_f4);
    assert_same_tensors(src, got);
    tio_container_free(got);
    got = NULL;
    ASSERT_CODE(tio_stream_recv(sub_i2, &got, &err), TIO_E_TIMEOUT, err, "filtered out");
    /* opts->topic wins over the fragment: "#i2" with topic "f4" passes,
     * "#f4" with topic "i2" does not */
    so.topic = "f4";
    snprintf(url, sizeof url, "zsub://127.0.0.1:%d#i2", p1);
    tio_stream *sub_opt = xopen(url, &so);
    ASSERT_OK(tio_stream_wait_subscribers(pub1, 4, TMO, &err), err, "1 more");
    so.topic = "i2";
    snprintf(url, sizeof url, "zsub://127.0.0.1:%d#f4", p1);
    tio_stream *sub_opt_i2 = xopen(url, &so);
    ASSERT_OK(tio_stream_wait_subscribers(pub1, 5, TMO, &err), err, "1 more");
    xsend(pub1, src, NULL);
    got = xrecv(sub_opt);
    assert_same_tensors(src, got);
    tio_container_free(got);
    got = NULL;
    ASSERT_CODE(tio_stream_recv(sub_opt_i2, &got, &err), TIO_E_TIMEOUT, err, "opt topic");
    tio_stream_close(sub_opt, NULL);
    tio_stream_close(sub_opt_i2, NULL);
    tio_stream_close(sub_i2, NULL);
    tio_stream_close(sub_f4, NULL);
    tio_stream_close(pub1, NULL);
    tio_stream_close(pub2, NULL);
    tio_container_free(src);
}

/* The protocol decides the default format; the receiver's protocol limits
 * what it accepts. */
static void test_proto(void **state) {
    (void)state;
    tio_container *src = open_vec("zio/tensorcom/tb_f32_3d_i16_2d.ten");
    static const struct {
        tio_proto tx, rx;
        unsigned flags;
        const char *proto; /* expected, or NULL for a rejected message */
    } cases[] = {
        {TIO_PROTO_AUTO, TIO_PROTO_AUTO, 0, "zio"}, /* plain tcp: zio */
        {TIO_PROTO_ZIO, TIO_PROTO_AUTO, TIO_STREAM_SINGLE, "zio"},
        {TIO_PROTO_TENSORCOM, TIO_PROTO_AUTO, 0, "tensorcom"},
        {TIO_PROTO_TENSORCOM, TIO_PROTO_TENSORCOM, TIO_STREAM_SINGLE, "tenbin"},
        {TIO_PROTO_ZIO, TIO_PROTO_ZIO, 0, "zio"},
        {TIO_PROTO_ZIO, TIO_PROTO_TENSORCOM, 0, NULL},
        {TIO_PROTO_TENSORCOM, TIO_PROTO_ZIO, 0, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tio_stream_options bo = sopts(TIO_SOCKET_PULL, 0), co = sopts(TIO_SOCKET_PUSH, cases[i].flags);
        bo.proto = cases[i].rx;
        co.proto = cases[i].tx;
        tio_stream *rx, *tx;
        tcp_pair(&bo, &co, &rx, &tx);
        xsend(tx, src, NULL);
        tio_container *got = NULL;
        tio_error err;
        int rc = tio_stream_recv(rx, &got, &err);
        if (cases[i].proto) {
            ASSERT_OK(rc, err, "recv");
            assert_prop(got, "proto", cases[i].proto);
            assert_same_tensors(src, got);
            tio_container_free(got);
        } else {
            assert_int_not_equal(rc, TIO_OK);
            assert_int_not_equal(rc, TIO_E_TIMEOUT);
            tio_stream_stats st;
            tio_stream_get_stats(rx, &st);
            assert_int_equal(st.malformed, 1);
        }
        tio_stream_close(tx, NULL);
        tio_stream_close(rx, NULL);
    }
    tio_container_free(src);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_url_parse),
        cmocka_unit_test(test_open_errors_and_roles),
        cmocka_unit_test(test_tensorcom_urls),
        cmocka_unit_test(test_proto),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
