/* SPDX-License-Identifier: ISC */
/*
 * libvirt_meta.c - parse vcpusched's <vs:sched> metadata element and
 * libvirt's status file with libxml2 (no network, no entity expansion, no
 * DTD accepted), and pick the pool a domain goes to. Pure: the hook, the
 * daemon's libvirt watcher, the unit tests and the fuzzer share it.
 */
#include <errno.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libvirt_meta.h"

/* No network, no entities substituted, quiet: errors come back in ctxt. */
#define XML_OPTS  (XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING)
#define PID_LIMIT 4194304 /* the kernel's PID_MAX_LIMIT, as the protocol */

/* A value: 1..2047 bytes, no control characters (protocol.md, params). */
static bool
value_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n >= VS_VALUE_SIZE)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

/* Only blanks in xml[0..len) (not NUL-terminated: the fuzzer's input). */
static bool
blank(const char *xml, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (xml[i] != ' ' && xml[i] != '\t' && xml[i] != '\r' && xml[i] != '\n')
            return false;
    return true;
}

/* Text from the document for a message: printable ASCII, else \xHH, cut. */
static void
quote(const char *s, char *out, size_t len)
{
    size_t o = 0;

    for (; *s != '\0' && o + 5 < len; s++) {
        unsigned char c = (unsigned char)*s;

        if (c >= 0x20 && c < 0x7f && c != '\\')
            out[o++] = (char)c;
        else
            o += (size_t)snprintf(out + o, len - o, "\\x%02x", c);
    }
    out[o] = '\0';
}

/*
 * Parse `xml` into a document, refusing what we never accept: too long,
 * a DTD (entities are how XML bombs and external reads start), not
 * well-formed. Returns the document or NULL with *r and err set.
 */
static xmlDocPtr
doc_read(const char *xml, size_t len, const char *what, int *r, char *err, size_t errlen)
{
    xmlParserCtxtPtr ctxt;
    xmlDocPtr doc;

    *r = -EINVAL;
    if (len > LIBVIRT_XML_MAX || len > INT_MAX) {
        snprintf(err, errlen, "%s: longer than %zu bytes", what, LIBVIRT_XML_MAX);
        *r = -E2BIG;
        return NULL;
    }
    if (memmem(xml, len, "<!DOCTYPE", 9) != NULL || memmem(xml, len, "<!ENTITY", 8) != NULL) {
        snprintf(err, errlen, "%s: a DTD is not allowed", what);
        return NULL;
    }
    ctxt = xmlNewParserCtxt();
    if (ctxt == NULL) {
        snprintf(err, errlen, "%s: out of memory", what);
        *r = -ENOMEM;
        return NULL;
    }
    doc = xmlCtxtReadMemory(ctxt, xml, (int)len, "libvirt.xml", NULL, XML_OPTS);
    if (doc == NULL || !ctxt->wellFormed) {
        const char *msg = ctxt->lastError.message ? ctxt->lastError.message : "not XML\n";

        snprintf(err, errlen, "%s: not well-formed XML (line %d): %.*s", what, ctxt->lastError.line,
                 (int)strcspn(msg, "\n"), msg);
        xmlFreeDoc(doc);
        doc = NULL;
    } else if (doc->intSubset != NULL || doc->extSubset != NULL) {
        snprintf(err, errlen, "%s: a DTD is not allowed", what);
        xmlFreeDoc(doc);
        doc = NULL;
    }
    xmlFreeParserCtxt(ctxt);
    return doc;
}

static bool
is_ours(xmlNodePtr n)
{
    return n->ns != NULL && n->ns->href != NULL &&
           strcmp((const char *)n->ns->href, LIBVIRT_META_NS) == 0;
}

static bool
named(xmlNodePtr n, const char *name)
{
    return n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, name) == 0;
}

/* <sched> holds no child elements and no text but blanks. */
static int
sched_check_content(xmlNodePtr el, char *err, size_t errlen)
{
    for (xmlNodePtr c = el->children; c != NULL; c = c->next) {
        if (c->type == XML_ELEMENT_NODE) {
            char q[64];

            quote((const char *)c->name, q, sizeof(q));
            snprintf(err, errlen, "sched: unexpected child element <%s> (only attributes)", q);
            return -EINVAL;
        }
        if ((c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) && c->content != NULL &&
            strspn((const char *)c->content, " \t\r\n") != strlen((const char *)c->content)) {
            snprintf(err, errlen, "sched: unexpected text (only attributes)");
            return -EINVAL;
        }
    }
    return 0;
}

/* One attribute of <sched> into m: pool, policy or a parameter. */
static int
sched_add_attr(struct libvirt_meta *m, const char *key, const char *val, char *err, size_t errlen)
{
    char q[80];

    quote(val, q, sizeof(q));
    if (strcmp(key, "pool") == 0) {
        if (!names_valid(val)) {
            snprintf(err, errlen, "pool: '%s' is not a pool name (1-63 of A-Za-z0-9_.:+@-)", q);
            return -EINVAL;
        }
        snprintf(m->pool, sizeof(m->pool), "%s", val);
        return 0;
    }
    if (strcmp(key, "policy") == 0) {
        if (!names_key_valid(val)) {
            snprintf(err, errlen, "policy: '%s' is not a policy name (1-31 of a-z0-9_)", q);
            return -EINVAL;
        }
        snprintf(m->policy, sizeof(m->policy), "%s", val);
        return 0;
    }
    if (!value_ok(val)) {
        snprintf(err, errlen, "%s: '%s' is not a value (1-2047 bytes, no control characters)", key,
                 q);
        return -EINVAL;
    }
    if (m->nr_params == VS_PARAMS_MAX) {
        snprintf(err, errlen, "sched: more than %d parameters", VS_PARAMS_MAX);
        return -E2BIG;
    }
    snprintf(m->keys[m->nr_params], VS_KEY_SIZE, "%s", key);
    snprintf(m->vals[m->nr_params], VS_VALUE_SIZE, "%s", val);
    m->nr_params++;
    return 0;
}

/* Our element `el` (already known to be ours or the bare <sched>) into m. */
static int
sched_read(xmlNodePtr el, struct libvirt_meta *m, char *err, size_t errlen)
{
    char q[64];
    int r;

    if (strcmp((const char *)el->name, LIBVIRT_META_ELEMENT) != 0) {
        quote((const char *)el->name, q, sizeof(q));
        snprintf(err, errlen, "metadata: unknown element <%s> in %s (expected <sched>)", q,
                 LIBVIRT_META_NS);
        return -EINVAL;
    }
    if ((r = sched_check_content(el, err, errlen)) < 0)
        return r;
    m->present = true;
    for (xmlAttrPtr a = el->properties; a != NULL; a = a->next) {
        const char *key = (const char *)a->name;
        xmlChar *val;

        quote(key, q, sizeof(q));
        if (a->ns != NULL) {
            snprintf(err, errlen, "sched: attribute %s: no namespace prefix expected", q);
            return -EINVAL;
        }
        if (!names_key_valid(key)) {
            snprintf(err, errlen, "sched: attribute '%s' is not a parameter name (a-z0-9_)", q);
            return -EINVAL;
        }
        val = xmlNodeListGetString(el->doc, a->children, 1);
        r = sched_add_attr(m, key, val != NULL ? (const char *)val : "", err, errlen);
        xmlFree(val);
        if (r < 0)
            return r;
    }
    return 0;
}

/* Children of <metadata>: at most one element of ours, the rest ignored. */
static int
metadata_read(xmlNodePtr md, struct libvirt_meta *m, char *err, size_t errlen)
{
    xmlNodePtr found = NULL;

    for (xmlNodePtr c = md->children; c != NULL; c = c->next) {
        if (c->type != XML_ELEMENT_NODE || !is_ours(c))
            continue;
        if (found != NULL) {
            snprintf(err, errlen, "metadata: two elements in namespace %s (one allowed)",
                     LIBVIRT_META_NS);
            return -EINVAL;
        }
        found = c;
    }
    return found != NULL ? sched_read(found, m, err, errlen) : 0;
}

/* The <metadata> children of a <domain> element (several tolerated). */
static int
domain_read(xmlNodePtr dom, struct libvirt_meta *m, char *err, size_t errlen)
{
    xmlNodePtr md = NULL;

    for (xmlNodePtr c = dom->children; c != NULL; c = c->next) {
        if (!named(c, "metadata") || c->ns != NULL)
            continue;
        if (md != NULL) {
            snprintf(err, errlen, "domain: two <metadata> elements");
            return -EINVAL;
        }
        md = c;
    }
    return md != NULL ? metadata_read(md, m, err, errlen) : 0;
}

static int
finish(int r, struct libvirt_meta *m)
{
    if (r < 0)
        memset(m, 0, sizeof(*m));
    return r;
}

int
libvirt_meta_parse_domain(const char *xml, size_t len, struct libvirt_meta *m, char *err,
                          size_t errlen)
{
    xmlNodePtr root;
    xmlDocPtr doc;
    int r;

    memset(m, 0, sizeof(*m));
    err[0] = '\0';
    doc = doc_read(xml, len, "domain", &r, err, errlen);
    if (doc == NULL)
        return finish(r, m);
    root = xmlDocGetRootElement(doc);
    if (root == NULL || !named(root, "domain") || root->ns != NULL) {
        snprintf(err, errlen, "domain: the root element is not <domain>");
        r = -EINVAL;
    } else {
        r = domain_read(root, m, err, errlen);
    }
    xmlFreeDoc(doc);
    return finish(r, m);
}

int
libvirt_meta_parse_element(const char *xml, size_t len, struct libvirt_meta *m, char *err,
                           size_t errlen)
{
    xmlNodePtr root;
    xmlDocPtr doc;
    int r;

    memset(m, 0, sizeof(*m));
    err[0] = '\0';
    if (xml == NULL || blank(xml, len))
        return 0;
    doc = doc_read(xml, len, "metadata", &r, err, errlen);
    if (doc == NULL)
        return finish(r, m);
    root = xmlDocGetRootElement(doc);
    if (root == NULL || (root->ns != NULL && !is_ours(root))) {
        snprintf(err, errlen, "metadata: the element is not in namespace %s", LIBVIRT_META_NS);
        r = -EINVAL;
    } else {
        r = sched_read(root, m, err, errlen);
    }
    xmlFreeDoc(doc);
    return finish(r, m);
}

/* A positive integer attribute below PID_LIMIT (pids, thread ids). */
static int
attr_uint(xmlNodePtr n, const char *name, unsigned long max, unsigned long *out)
{
    xmlChar *s = xmlGetNoNsProp(n, (const xmlChar *)name);
    char *end;
    int r = -EINVAL;

    if (s == NULL)
        return -ENOENT;
    errno = 0;
    *out = strtoul((const char *)s, &end, 10);
    if (s[0] >= '0' && s[0] <= '9' && *end == '\0' && errno == 0 && *out <= max)
        r = 0;
    xmlFree(s);
    return r;
}

/* Insert vCPU (id, tid) keeping ids ascending; refuse a repeated id or tid. */
static int
status_add_vcpu(struct libvirt_status *st, unsigned int id, pid_t tid, char *err, size_t errlen)
{
    unsigned int i = st->nr_vcpus;

    if (st->nr_vcpus == LIBVIRT_VCPUS_MAX) {
        snprintf(err, errlen, "status: more than %d vcpus", LIBVIRT_VCPUS_MAX);
        return -E2BIG;
    }
    if (tid == st->pid) {
        snprintf(err, errlen, "status: vcpu %u: thread %d is QEMU's main thread", id, (int)tid);
        return -EINVAL;
    }
    for (unsigned int k = 0; k < st->nr_vcpus; k++) {
        if (st->ids[k] == id || st->tids[k] == tid) {
            snprintf(err, errlen, "status: vcpu %u: id or thread %d appears twice", id, (int)tid);
            return -EINVAL;
        }
    }
    while (i > 0 && st->ids[i - 1] > id) {
        st->ids[i] = st->ids[i - 1];
        st->tids[i] = st->tids[i - 1];
        i--;
    }
    st->ids[i] = id;
    st->tids[i] = tid;
    st->nr_vcpus++;
    return 0;
}

/* <vcpus><vcpu id='N' pid='TID'/>...; a vcpu without pid is skipped. */
static int
status_read_vcpus(xmlNodePtr vcpus, struct libvirt_status *st, char *err, size_t errlen)
{
    for (xmlNodePtr v = vcpus->children; v != NULL; v = v->next) {
        unsigned long id, tid;
        int r;

        if (!named(v, "vcpu"))
            continue;
        if (attr_uint(v, "id", LIBVIRT_VCPUS_MAX * 16UL, &id) < 0) {
            snprintf(err, errlen, "status: <vcpu> without a valid id");
            return -EINVAL;
        }
        r = attr_uint(v, "pid", PID_LIMIT, &tid);
        if (r == -ENOENT)
            continue; /* libvirt drops ids it cannot trust (single-threaded TCG) */
        if (r < 0 || tid == 0) {
            snprintf(err, errlen, "status: vcpu %lu: bad thread id", id);
            return -EINVAL;
        }
        if ((r = status_add_vcpu(st, (unsigned int)id, (pid_t)tid, err, errlen)) < 0)
            return r;
    }
    return 0;
}

static void
status_read_name(xmlNodePtr dom, struct libvirt_status *st)
{
    for (xmlNodePtr c = dom->children; c != NULL; c = c->next) {
        if (named(c, "name")) {
            xmlChar *s = xmlNodeGetContent(c);

            snprintf(st->name, sizeof(st->name), "%s", s != NULL ? (const char *)s : "");
            xmlFree(s);
            return;
        }
    }
}

/* The children of <domstatus>: vcpus and the embedded domain. */
static int
status_read(xmlNodePtr root, struct libvirt_status *st, char *err, size_t errlen)
{
    unsigned long pid;
    int r = 0;

    if (attr_uint(root, "pid", PID_LIMIT, &pid) < 0 || pid == 0) {
        snprintf(err, errlen, "status: <domstatus> has no valid pid (domain not running?)");
        return -EINVAL;
    }
    st->pid = (pid_t)pid;
    for (xmlNodePtr c = root->children; c != NULL && r == 0; c = c->next) {
        if (named(c, "vcpus"))
            r = status_read_vcpus(c, st, err, errlen);
        else if (named(c, "domain")) {
            status_read_name(c, st);
            r = domain_read(c, &st->meta, err, errlen);
        }
    }
    if (r == 0 && st->nr_vcpus == 0) {
        snprintf(err, errlen, "status: no vcpu thread ids (single-threaded TCG?)");
        r = -ESRCH;
    }
    return r;
}

int
libvirt_meta_parse_status(const char *xml, size_t len, struct libvirt_status *st, char *err,
                          size_t errlen)
{
    xmlNodePtr root;
    xmlDocPtr doc;
    int r;

    memset(st, 0, sizeof(*st));
    err[0] = '\0';
    doc = doc_read(xml, len, "status", &r, err, errlen);
    if (doc == NULL)
        return r;
    root = xmlDocGetRootElement(doc);
    if (root == NULL || !named(root, "domstatus") || root->ns != NULL) {
        snprintf(err, errlen, "status: the root element is not <domstatus>");
        r = -EINVAL;
    } else {
        r = status_read(root, st, err, errlen);
    }
    xmlFreeDoc(doc);
    if (r < 0 && r != -ESRCH)
        memset(st, 0, sizeof(*st));
    return r;
}

/* Index of the pool called `name` (NULL: any) running `policy` ("" = any), or -1. */
static long
pool_find(const struct libvirt_pool *pools, size_t n, const char *name, const char *policy)
{
    for (size_t i = 0; i < n; i++)
        if ((name == NULL || strcmp(pools[i].name, name) == 0) &&
            (policy[0] == '\0' || strcmp(pools[i].policy, policy) == 0))
            return (long)i;
    return -1;
}

int
libvirt_meta_choose_pool(const struct libvirt_meta *m, const struct libvirt_pool *pools, size_t n,
                         const char *current, char *pool, size_t len, char *note, size_t notelen)
{
    long at;

    note[0] = '\0';
    if (m->pool[0] != '\0') {
        at = pool_find(pools, n, m->pool, "");
        if (at < 0) {
            snprintf(note, notelen, "pool: no pool %s", m->pool);
            return -ENOENT;
        }
    } else {
        at = current != NULL ? pool_find(pools, n, current, m->policy) : -1;
        if (at < 0)
            at = pool_find(pools, n, NULL, m->policy);
        /* A preference, not a condition: the domain stays managed. */
        if (at < 0 && current != NULL)
            at = pool_find(pools, n, current, "");
        if (at < 0 && n > 0)
            at = 0;
        if (at < 0) {
            snprintf(note, notelen, "no pools");
            return -ENOENT;
        }
    }
    snprintf(pool, len, "%s", pools[at].name);
    if (m->policy[0] != '\0' && strcmp(pools[at].policy, m->policy) != 0) {
        if (m->pool[0] != '\0')
            snprintf(note, notelen, "pool %s runs %s, not policy %s", pools[at].name,
                     pools[at].policy, m->policy);
        else
            snprintf(note, notelen, "no pool runs policy %s: pool %s (%s)", m->policy,
                     pools[at].name, pools[at].policy);
        return 1;
    }
    return 0;
}

void
libvirt_meta_format(const struct libvirt_meta *m, char *buf, size_t len)
{
    size_t o = 0;

    buf[0] = '\0';
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (o < len)                                                                               \
            o += (size_t)snprintf(buf + o, len - o, __VA_ARGS__);                                  \
    } while (0)
    if (m->pool[0] != '\0')
        PUT("pool=%s", m->pool);
    if (m->policy[0] != '\0')
        PUT("%spolicy=%s", o ? " " : "", m->policy);
    for (size_t i = 0; i < m->nr_params; i++)
        PUT("%s%s=%.64s", o ? " " : "", m->keys[i], m->vals[i]);
#undef PUT
}
