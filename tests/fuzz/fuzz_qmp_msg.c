/* SPDX-License-Identifier: ISC */
/*
 * fuzz_qmp_msg.c - libFuzzer target for libqmp's pure layer: one server
 * line through qmp_msg_parse() and whatever the message kind leads to
 * (greeting fields, error text, query-cpus-fast conversion), and the same
 * bytes as a libvirt reply through qmp_vcpus_parse_reply(). Seeds:
 * tests/fixtures/qmp; dictionary: fuzz_qmp_msg.dict.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "qmp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
fuzz_message(const char *line, size_t len)
{
    char err[QMP_ERRLEN];
    struct qmp_greeting g;
    struct qmp_vcpus vs;
    struct qmp_msg msg;

    if (qmp_msg_parse(line, len, &msg, err, sizeof(err)) < 0)
        return;
    if (msg.kind == QMP_MSG_GREETING)
        qmp_msg_greeting(&msg, &g, err, sizeof(err));
    if (msg.kind == QMP_MSG_ERROR)
        qmp_msg_format_error(&msg, "fuzz", err, sizeof(err));
    if (msg.kind == QMP_MSG_RETURN && qmp_vcpus_from_json(msg.value, &vs, err, sizeof(err)) == 0)
        qmp_vcpus_free(&vs);
    qmp_msg_free(&msg);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char err[QMP_ERRLEN];
    struct qmp_vcpus vs;
    char *text;

    fuzz_message((const char *)data, size);
    /* The text API wants a C string: the bytes up to the first NUL. */
    text = malloc(size + 1);
    if (text == NULL)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    if (qmp_vcpus_parse_reply(text, &vs, err, sizeof(err)) == 0)
        qmp_vcpus_free(&vs);
    free(text);
    return 0;
}
