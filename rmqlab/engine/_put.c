/*
 * rmqlab.engine._put — the common case of MessageStore.put (Java
 * DefaultMessageStore.putMessage -> CommitLog.asyncPutMessage -> doAppend) in one C
 * call.
 *
 * Why C: an ASYNC put of a 128-byte message is ~5 us of interpreter time in Python
 * (attribute loads, the properties join, the lock, a 20-argument pack_into, the
 * result), most of the budget RocketMQ's own store needs for the whole put.  This
 * module does the same steps with the same bytes in ~1.5-2.5 us.  It is optional: without
 * it (no compiler at install time, RMQLAB_PURE_PUT=1) MessageStore.put runs the
 * Python fast path, and tests compare the two byte for byte.
 *
 * What it owns, and what it does not:
 * - It handles only the case MessageStore.put's Python fast path handles without
 *   help: a topic already in the store's fast-topic table, sysFlag 0, properties as
 *   a dict of str -> str without DELAY, no hosts of its own, every field within its
 *   Java type.  For anything else — and for the rare steps of the common case (a file
 *   to roll, pages to pre-fault, a reput batch to dispatch, a put lock another thread
 *   holds, a store shut down) — it calls the Python path before touching anything,
 *   which answers with the right status.
 * - Like the Python path, it copies small records into the mapping and writes bodies
 *   from big_body bytes on with one pwritev (the GIL released, the put lock held),
 *   their DispatchRequest built by the store's _big_request; the body CRC is zlib's
 *   below isal_from bytes and the caller's crc32 (ISA-L's) from there on.
 * - Under SYNC_FLUSH the put then waits, outside the lock, in the store's
 *   _sync_wait(end, WAIT property, store timestamp), whose answer is the put's status,
 *   as in Python.
 * - The record layout is not declared here: the fixed fields are written with the
 *   widths of the struct format the caller passes (rmqlab.format.encode.record_packer,
 *   derived from the construct schema), in that packer's argument order; the topic
 *   field and the fixed size come from the store's fast-topic table.
 * - Thread safety: the put lock (a threading.Lock) is taken with acquire(False), and
 *   every change is made while it is held, as in Python.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/mman.h>
#include <unistd.h>
#include <time.h>
#include <zlib.h>
#include <stdint.h>

#define MAX_FIELDS 32
#define MAX_PROPS 32767 /* Java: propertiesLength is a short */
#define KEY_CACHE 64
#define MAX_HEAD 256

/* attributes read on every put, by name; where the object's class keeps them in
 * __slots__ (Message, WritableMappedFile) they are read at the slot's offset */
enum { M_TOPIC, M_BODY, M_PROPERTIES, M_PROPERTIES_RAW, M_QUEUE_ID, M_FLAG, M_SYS_FLAG, M_BORN_TIMESTAMP,
       M_BORN_HOST, M_STORE_TIMESTAMP, M_STORE_HOST, M_RECONSUME_TIMES, M_PREPARED_TRANSACTION_OFFSET, M_COUNT };
enum { W_WROTE_POSITION, W_FILE_SIZE, W_POPULATED, W_FILE_FROM_OFFSET, W_MM, W_FD, W_COUNT };

typedef struct {
    PyTypeObject *type;   /* the class whose slots these are (NULL: read by name) */
    Py_ssize_t *offsets;  /* one per name, -1 when not a writable object slot */
} Slots;

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Slots msg_slots, file_slots;
    Py_ssize_t msg_offsets[M_COUNT], file_offsets[W_COUNT];
    PyObject *message_type, *mapped_file_type; /* owned: the Slots point into them */
    PyObject *clock;        /* None: the system clock; else an object whose now_ms() is read */
    char shut_down;         /* set (the shut_down member) by the store under the put lock: Python answers then */
    PyObject *commitlog;    /* its CommitLogWriter (this start's): files, store_timestamp, max_offset */
    PyObject *pending, *pending_reqs; /* store._pending, store._pending_reqs: the same lists for its life */
    PyObject *key_topic;    /* the topic of the cached (topic, queue id) keys */
    PyObject *keys[KEY_CACHE]; /* (key_topic, qid) for small queue ids: one tuple per queue, not per put */
    PyObject *fallback;     /* store._put_python(msg) */
    PyObject *big_request;  /* store._big_request(...): the DispatchRequest of a big record */
    PyObject *sync_wait;    /* None (ASYNC_FLUSH), or store._sync_wait(end, WAIT, ts) -> status */
    PyObject *crc_fn;       /* hashing.crc32 (ISA-L's), for bodies from isal_from bytes on */
    long long isal_from;
    PyObject *fast_topics;  /* dict topic -> (topic field bytes, magic, fixed size) */
    PyObject *queue_offsets;/* dict (topic, queue_id) -> next queue offset */
    PyObject *lock;         /* the put lock */
    PyTypeObject *result_type; /* PutMessageResult (a tuple subclass) */
    PyObject *ok;           /* PutMessageStatus.PUT_OK */
    PyObject *store_host;   /* (addr, port) in every result */
    PyObject *empty_str;
    char store_addr[16], born_addr[16]; /* the store's host, and the bornHost of messages without one */
    Py_ssize_t store_addr_len, born_addr_len;
    long long store_port, born_port;
    long long max_body, max_total, big_body, reput_batch, blank_size;
    int nfields;
    char codes[MAX_FIELDS];        /* i I q h b s */
    Py_ssize_t widths[MAX_FIELDS]; /* bytes */
    Py_ssize_t head_size;
    /* the properties' spelling, from rmqlab.format.properties (which owns it) */
    char nv_sep, prop_sep;            /* NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR */
    char delay_name[32], wait_name[32]; /* DELAY, WAIT */
    Py_ssize_t delay_len, wait_len;
    unsigned long long fast, slow; /* puts each way, for tests and the benchmark */
} Putter;

static PyObject *msg_names[M_COUNT], *file_names[W_COUNT];
static PyObject *s_files, *s_store_timestamp_attr,
    *s_max_offset, *s_acquire, *s_release, *s_now_ms;

/* a new reference to attribute k of o */
static PyObject *get(PyObject *o, const Slots *sl, PyObject **names, int k) {
    if (Py_TYPE(o) == sl->type && sl->offsets[k] >= 0) {
        PyObject *v = *(PyObject **)((char *)o + sl->offsets[k]);
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
    }
    return PyObject_GetAttr(o, names[k]); /* also raises the AttributeError of an unset slot */
}

static int set(PyObject *o, const Slots *sl, PyObject **names, int k, PyObject *v) {
    if (Py_TYPE(o) == sl->type && sl->offsets[k] >= 0) {
        PyObject **p = (PyObject **)((char *)o + sl->offsets[k]);
        PyObject *old = *p;
        Py_INCREF(v);
        *p = v;
        Py_XDECREF(old);
        return 0;
    }
    return PyObject_SetAttr(o, names[k], v);
}

/* the offsets of type's object slots with these names (-1 for anything else) */
static int find_slots(Slots *sl, PyTypeObject *type, PyObject **names, int n, Py_ssize_t *offsets) {
    sl->type = type;
    sl->offsets = offsets;
    for (int k = 0; k < n; k++) {
        offsets[k] = -1;
        PyObject *d = PyObject_GetAttr((PyObject *)type, names[k]);
        if (d == NULL) {
            PyErr_Clear();
            continue;
        }
        if (Py_IS_TYPE(d, &PyMemberDescr_Type)) {
            PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
            if (m->type == T_OBJECT_EX && !(m->flags & READONLY))
                offsets[k] = m->offset;
        }
        Py_DECREF(d);
    }
    return 0;
}

/* values of the fixed fields, in record_packer's order */
enum { F_TOTAL, F_MAGIC, F_BODY_CRC, F_QUEUE_ID, F_FLAG, F_QUEUE_OFFSET, F_PHY, F_SYS_FLAG,
       F_BORN_TS, F_BORN_ADDR, F_BORN_PORT, F_STORE_TS, F_STORE_ADDR, F_STORE_PORT,
       F_RECONSUME, F_PTO, F_BODY_LEN, F_COUNT };

static int fits(char code, long long v) {
    switch (code) {
    case 'i': return v >= -2147483648LL && v <= 2147483647LL;
    case 'I': return v >= 0 && v <= 4294967295LL;
    case 'h': return v >= -32768 && v <= 32767;
    case 'b': return v >= -128 && v <= 127;
    default: return 1; /* q */
    }
}

static void put_be(unsigned char *p, Py_ssize_t width, long long v) {
    unsigned long long u = (unsigned long long)v;
    for (Py_ssize_t k = width - 1; k >= 0; k--) {
        p[k] = (unsigned char)(u & 0xFF);
        u >>= 8;
    }
}

/* v (a new reference, consumed; NULL = error) as an int: 1 and *out set (or *is_none,
 * where the caller allows None), 0 when it is not an int or too big, -1 on error */
static int as_int(PyObject *v, long long *out, int *is_none) {
    if (v == NULL)
        return -1;
    if (is_none != NULL && (*is_none = v == Py_None)) {
        Py_DECREF(v);
        return 1;
    }
    if (!PyLong_Check(v)) {
        Py_DECREF(v);
        return 0;
    }
    int overflow = 0;
    *out = PyLong_AsLongLongAndOverflow(v, &overflow);
    Py_DECREF(v);
    if (*out == -1 && PyErr_Occurred())
        return -1;
    return overflow ? 0 : 1;
}

/* 1 when v (a new reference, consumed) is None, 0 when not, -1 on error */
static int is_none(PyObject *v) {
    if (v == NULL)
        return -1;
    Py_DECREF(v);
    return v == Py_None;
}

/* an attribute of the store's objects as a C integer (they are always ints) */
static int as_ll(PyObject *v, long long *out) {
    if (v == NULL)
        return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* "name\x01value\x02" for every pair, as Java MessageDecoder.messageProperties2String;
 * returns the length, -2 when the Python path must take this message, -1 on error;
 * *wait is set to the WAIT property's value (borrowed) when there is one */
static Py_ssize_t encode_properties(const Putter *self, PyObject *pd, char *buf, PyObject **wait) {
    Py_ssize_t pos = 0, n = 0, klen, vlen;
    PyObject *k, *v;
    while (PyDict_Next(pd, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k) || !PyUnicode_CheckExact(v))
            return -2; /* Python formats other values with str() */
        const char *ks = PyUnicode_AsUTF8AndSize(k, &klen);
        const char *vs = ks ? PyUnicode_AsUTF8AndSize(v, &vlen) : NULL;
        if (vs == NULL) {
            PyErr_Clear(); /* e.g. a lone surrogate: Python raises the same error itself */
            return -2;
        }
        if (klen == self->delay_len && memcmp(ks, self->delay_name, klen) == 0)
            return -2; /* the broker's delay rewrite happens in Python */
        if (klen == self->wait_len && memcmp(ks, self->wait_name, klen) == 0)
            *wait = v; /* Java isWaitStoreMsgOK: "false" lets a SYNC put return before the force */
        if (n + klen + vlen + 2 > MAX_PROPS)
            return -2;
        memcpy(buf + n, ks, klen);
        n += klen;
        buf[n++] = self->nv_sep;
        memcpy(buf + n, vs, vlen);
        n += vlen;
        buf[n++] = self->prop_sep;
    }
    return n;
}

/* the fixed fields at p, with the widths of the caller's format; returns the end */
static unsigned char *write_head(const Putter *self, unsigned char *p, const long long *values) {
    for (int k = 0; k < self->nfields; k++) {
        Py_ssize_t w = self->widths[k];
        if (self->codes[k] == 's')
            memcpy(p, k == F_BORN_ADDR ? self->born_addr : self->store_addr, w);
        else
            put_be(p, w, values[k]);
        p += w;
    }
    return p;
}

/* a new reference to the key (topic, queue_id) of store._queue_offsets; for the
 * first topic seen and small queue ids the same tuple every time (an identical key
 * also makes the dict's compare a pointer check) */
static PyObject *queue_key(Putter *self, PyObject *topic, PyObject *qid_obj, long long queue_id) {
    if (queue_id < KEY_CACHE && self->key_topic != NULL) {
        int same = topic == self->key_topic;
        if (!same) {
            same = PyUnicode_Compare(topic, self->key_topic) == 0;
            if (PyErr_Occurred())
                return NULL;
        }
        if (same) {
            PyObject *k = self->keys[queue_id];
            if (k == NULL) { /* with an exact int, whatever int subclass this message brought */
                PyObject *q = PyLong_FromLongLong(queue_id);
                k = q ? PyTuple_Pack(2, self->key_topic, q) : NULL;
                Py_XDECREF(q);
                if ((self->keys[queue_id] = k) == NULL)
                    return NULL;
            }
            Py_INCREF(k);
            return k;
        }
    } else if (queue_id < KEY_CACHE) {
        Py_INCREF(topic);
        self->key_topic = topic;
        return queue_key(self, topic, qid_obj, queue_id);
    }
    return PyTuple_Pack(2, topic, qid_obj);
}

static PyObject *slow(Putter *self, PyObject *msg) {
    self->slow++;
    return PyObject_CallOneArg(self->fallback, msg);
}

/* lock.acquire(False) (got set) or lock.release() (got NULL); -1 on error */
static int lock_call(PyObject *lock, PyObject *name, int *got) {
    PyObject *args[2] = {lock, Py_False};
    PyObject *r = PyObject_VectorcallMethod(name, args, got ? 2 : 1, NULL);
    if (r == NULL)
        return -1;
    if (got)
        *got = r == Py_True;
    Py_DECREF(r);
    return 0;
}

static PyObject *Putter_vectorcall(Putter *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    if (PyVectorcall_NARGS(nargsf) != 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_SetString(PyExc_TypeError, "put() takes one message");
        return NULL;
    }
    PyObject *msg = args[0];

    /* -- outside the lock: is this the common case, and its bytes -------------------- */
    long long sys_flag, queue_id, flag, born_ts = 0, store_ts = 0, reconsume, pto;
    int born_none, store_none, r;
    char props[MAX_PROPS + 1];
    Py_ssize_t plen = 0;
    PyObject *topic = NULL, *body = NULL, *pd = NULL, *qid_obj = NULL, *tinfo, *wait = Py_None;

    if ((r = as_int(get(msg, &self->msg_slots, msg_names, M_SYS_FLAG), &sys_flag, NULL)) <= 0 || sys_flag != 0)
        return r < 0 ? NULL : slow(self, msg);
    if ((r = is_none(get(msg, &self->msg_slots, msg_names, M_PROPERTIES_RAW))) <= 0 || (r = is_none(get(msg, &self->msg_slots, msg_names, M_BORN_HOST))) <= 0 || (r = is_none(get(msg, &self->msg_slots, msg_names, M_STORE_HOST))) <= 0)
        return r < 0 ? NULL : slow(self, msg);
    if ((r = as_int(get(msg, &self->msg_slots, msg_names, M_FLAG), &flag, NULL)) <= 0 || (r = as_int(get(msg, &self->msg_slots, msg_names, M_RECONSUME_TIMES), &reconsume, NULL)) <= 0 ||
        (r = as_int(get(msg, &self->msg_slots, msg_names, M_PREPARED_TRANSACTION_OFFSET), &pto, NULL)) <= 0 ||
        (r = as_int(get(msg, &self->msg_slots, msg_names, M_BORN_TIMESTAMP), &born_ts, &born_none)) <= 0 ||
        (r = as_int(get(msg, &self->msg_slots, msg_names, M_STORE_TIMESTAMP), &store_ts, &store_none)) <= 0)
        return r < 0 ? NULL : slow(self, msg);
    if (!fits(self->codes[F_FLAG], flag) || !fits(self->codes[F_RECONSUME], reconsume) || !fits(self->codes[F_PTO], pto) ||
        !fits(self->codes[F_BORN_TS], born_ts) || !fits(self->codes[F_STORE_TS], store_ts))
        return slow(self, msg); /* Python answers MESSAGE_ILLEGAL with the field's error */

    topic = get(msg, &self->msg_slots, msg_names, M_TOPIC);
    if (topic == NULL)
        return NULL;
    tinfo = PyUnicode_CheckExact(topic) ? PyDict_GetItemWithError(self->fast_topics, topic) : NULL; /* borrowed */
    if (tinfo == NULL) {
        Py_DECREF(topic);
        return PyErr_Occurred() ? NULL : slow(self, msg);
    }
    Py_INCREF(tinfo);
    PyObject *result = NULL;
    body = get(msg, &self->msg_slots, msg_names, M_BODY);
    qid_obj = body ? get(msg, &self->msg_slots, msg_names, M_QUEUE_ID) : NULL;
    pd = qid_obj ? get(msg, &self->msg_slots, msg_names, M_PROPERTIES) : NULL;
    if (pd == NULL)
        goto done;
    int overflow = 0;
    queue_id = PyLong_Check(qid_obj) ? PyLong_AsLongLongAndOverflow(qid_obj, &overflow) : -1;
    if (queue_id == -1 && PyErr_Occurred())
        goto done;
    if (!PyBytes_CheckExact(body) || overflow || queue_id < 0 || !fits(self->codes[F_QUEUE_ID], queue_id))
        goto fallback;
    if (pd != Py_None) {
        if (!PyDict_CheckExact(pd))
            goto fallback;
        plen = encode_properties(self, pd, props, &wait);
        if (plen == -1)
            goto done;
        if (plen == -2)
            goto fallback;
    }
    Py_ssize_t blen = PyBytes_GET_SIZE(body);
    PyObject *prefix = PyTuple_GET_ITEM(tinfo, 0);
    long long magic = PyLong_AsLongLong(PyTuple_GET_ITEM(tinfo, 1));
    long long fixed = PyLong_AsLongLong(PyTuple_GET_ITEM(tinfo, 2));
    if ((magic == -1 || fixed == -1) && PyErr_Occurred())
        goto done;
    long long total = fixed + blen + plen;
    if (blen > self->max_body || total > self->max_total)
        goto fallback;
    /* bodies from big_body on are written with pwritev (no page fault per 4 KiB of the
     * mapping) and bring their dispatch request, as in Python (see _put_python) */
    int big = blen >= self->big_body;
    long long body_crc;
    if (blen >= self->isal_from) { /* the same choice as the Python path: ISA-L's call pays off here */
        PyObject *c = PyObject_CallOneArg(self->crc_fn, body);
        if (as_ll(c, &body_crc) < 0)
            goto done;
    } else {
        body_crc = (long long)crc32(0L, (const Bytef *)PyBytes_AS_STRING(body), (uInt)blen);
    }
    body_crc &= 0x7FFFFFFFLL;

    /* -- the put lock: take it without blocking, or let Python wait for it ------------- */
    int got = 0;
    if (lock_call(self->lock, s_acquire, &got) < 0)
        goto done;
    if (!got)
        goto fallback;
    PyObject *pending = self->pending, *reqs = self->pending_reqs, *clog = self->commitlog, *files = NULL, *f = NULL, *mm = NULL, *key = NULL;
    PyObject *o_qoff = NULL, *o_next = NULL, *o_phy = NULL, *o_ts = NULL, *o_total = NULL, *o_end = NULL, *o_max = NULL, *request = NULL;
    int go_slow = 0, failed = 1;
    Py_buffer view = {0};
    long long qoff = 0, pos, fsize, populated, base, ts, phy = 0, end = 0;

    if (self->shut_down) {
        go_slow = 1, failed = 0; /* Python answers SERVICE_NOT_AVAILABLE */
        goto unlock;
    }
    if (self->reput_batch > 0 && PyList_GET_SIZE(pending) + PyList_GET_SIZE(reqs) + 1 >= self->reput_batch) {
        go_slow = 1, failed = 0; /* this put fills the reput batch: Python dispatches it */
        goto unlock;
    }
    if ((files = PyObject_GetAttr(clog, s_files)) == NULL)
        goto unlock;
    if (!PyList_Check(files) || PyList_GET_SIZE(files) == 0) {
        go_slow = 1, failed = 0;
        goto unlock;
    }
    f = PyList_GET_ITEM(files, PyList_GET_SIZE(files) - 1);
    Py_INCREF(f);
    if (as_ll(get(f, &self->file_slots, file_names, W_WROTE_POSITION), &pos) < 0 || as_ll(get(f, &self->file_slots, file_names, W_FILE_SIZE), &fsize) < 0 || as_ll(get(f, &self->file_slots, file_names, W_POPULATED), &populated) < 0 ||
        as_ll(get(f, &self->file_slots, file_names, W_FILE_FROM_OFFSET), &base) < 0)
        goto unlock;
    if (total + self->blank_size > fsize - pos || (!big && pos + total > populated)) {
        go_slow = 1, failed = 0; /* roll to the next file or pre-fault pages: Python does it */
        goto unlock;
    }
    if (store_none && self->clock != Py_None) {
        PyObject *args1[1] = {self->clock}; /* an injected clock, read under the lock as in Python */
        if (as_ll(PyObject_VectorcallMethod(s_now_ms, args1, 1, NULL), &ts) < 0)
            goto unlock;
    } else if (store_none) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now); /* time.time_ns() // 1_000_000 */
        ts = (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000;
    } else {
        ts = store_ts;
    }
    if ((key = queue_key(self, topic, qid_obj, queue_id)) == NULL)
        goto unlock;
    PyObject *cur = PyDict_GetItemWithError(self->queue_offsets, key); /* borrowed */
    if (cur == NULL && PyErr_Occurred())
        goto unlock;
    if (cur != NULL && (qoff = PyLong_AsLongLong(cur)) == -1 && PyErr_Occurred())
        goto unlock;
    phy = base + pos;
    end = pos + total;
    if ((o_qoff = PyLong_FromLongLong(qoff)) == NULL || (o_next = PyLong_FromLongLong(qoff + 1)) == NULL ||
        (o_phy = PyLong_FromLongLong(phy)) == NULL || (o_ts = PyLong_FromLongLong(ts)) == NULL ||
        (o_total = PyLong_FromLongLong(total)) == NULL || (o_end = PyLong_FromLongLong(end)) == NULL ||
        (o_max = PyLong_FromLongLong(phy + total)) == NULL)
        goto unlock;

    long long values[F_COUNT] = {0};
    values[F_TOTAL] = total;
    values[F_MAGIC] = magic;
    values[F_BODY_CRC] = body_crc;
    values[F_QUEUE_ID] = queue_id;
    values[F_FLAG] = flag;
    values[F_QUEUE_OFFSET] = qoff;
    values[F_PHY] = phy;
    values[F_SYS_FLAG] = 0;
    values[F_BORN_TS] = born_none ? ts : born_ts;
    values[F_BORN_PORT] = self->born_port;
    values[F_STORE_TS] = ts;
    values[F_STORE_PORT] = self->store_port;
    values[F_RECONSUME] = reconsume;
    values[F_PTO] = pto;
    values[F_BODY_LEN] = blen;
    if (!fits(self->codes[F_TOTAL], total) || !fits(self->codes[F_QUEUE_OFFSET], qoff)) {
        go_slow = 1, failed = 0;
        goto unlock;
    }
    unsigned char plen_be[2];
    put_be(plen_be, 2, plen);
    if (big) {
        /* the request first: if building it fails, nothing has been written */
        PyObject *o_pto = PyLong_FromLongLong(pto);
        if (o_pto == NULL)
            goto unlock;
        PyObject *rargs[8] = {topic, qid_obj, o_phy, o_total, o_ts, o_qoff, pd, o_pto};
        request = PyObject_Vectorcall(self->big_request, rargs, 8, NULL);
        Py_DECREF(o_pto);
        long long fd;
        if (request == NULL || as_ll(get(f, &self->file_slots, file_names, W_FD), &fd) < 0)
            goto unlock;
        unsigned char head[MAX_HEAD];
        write_head(self, head, values);
        struct iovec iov[5] = {
            {head, (size_t)self->head_size},
            {PyBytes_AS_STRING(body), (size_t)blen},
            {PyBytes_AS_STRING(prefix), (size_t)PyBytes_GET_SIZE(prefix)},
            {plen_be, 2},
            {props, (size_t)plen},
        };
        ssize_t n;
        Py_BEGIN_ALLOW_THREADS /* the put lock stays held: other puts wait, other work goes on */
        n = pwritev((int)fd, iov, 5, (off_t)pos);
        Py_END_ALLOW_THREADS
        if (n != total) { /* name the file and the offset, as the project's errors do */
            int err = errno;
            PyObject *path = PyObject_GetAttrString(f, "path");
            PyObject *where = path ? PyObject_Str(path) : NULL;
            Py_XDECREF(path);
            if (where == NULL)
                goto unlock;
            if (n < 0)
                PyErr_Format(PyExc_OSError, "%U @ offset %lld: cannot write %lld bytes: %s", where, pos, total, strerror(err));
            else
                PyErr_Format(PyExc_OSError, "%U @ offset %lld: short write, %zd of %lld bytes", where, pos, n, total);
            Py_DECREF(where);
            goto unlock;
        }
    } else {
        /* the record, straight into the mapping */
        if ((mm = get(f, &self->file_slots, file_names, W_MM)) == NULL || PyObject_GetBuffer(mm, &view, PyBUF_WRITABLE | PyBUF_SIMPLE) < 0)
            goto unlock;
        if (view.len < end) {
            PyErr_Format(PyExc_RuntimeError, "commitlog mapping of %zd bytes is shorter than the write end %lld", view.len, end);
            goto unlock;
        }
        unsigned char *p = write_head(self, (unsigned char *)view.buf + pos, values);
        memcpy(p, PyBytes_AS_STRING(body), blen);
        p += blen;
        memcpy(p, PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix));
        p += PyBytes_GET_SIZE(prefix);
        memcpy(p, plen_be, 2);
        memcpy(p + 2, props, plen);
    }

    /* bookkeeping, as the Python path does it */
    if (PyDict_SetItem(self->queue_offsets, key, o_next) < 0 || set(f, &self->file_slots, file_names, W_WROTE_POSITION, o_end) < 0 ||
        PyObject_SetAttr(clog, s_store_timestamp_attr, o_ts) < 0 || PyObject_SetAttr(clog, s_max_offset, o_max) < 0 ||
        (big ? PyList_Append(reqs, request) : PyList_Append(pending, o_phy)) < 0)
        goto unlock;
    failed = 0;
unlock:
    if (view.obj != NULL)
        PyBuffer_Release(&view);
    {
        /* release even when an error is pending: set it aside for the call */
        PyObject *et, *ev, *tb;
        PyErr_Fetch(&et, &ev, &tb);
        if (lock_call(self->lock, s_release, NULL) < 0) {
            failed = 1;
            Py_XDECREF(et);
            Py_XDECREF(ev);
            Py_XDECREF(tb);
        } else {
            PyErr_Restore(et, ev, tb);
        }
    }
    Py_XDECREF(files);
    Py_XDECREF(f);
    Py_XDECREF(mm);
    Py_XDECREF(key);
    Py_XDECREF(o_next);
    Py_XDECREF(request);
    Py_XDECREF(o_end);
    Py_XDECREF(o_max);
    if (failed || go_slow) {
        Py_XDECREF(o_qoff);
        Py_XDECREF(o_phy);
        Py_XDECREF(o_ts);
        Py_XDECREF(o_total);
        if (failed)
            goto done;
        goto fallback;
    }
    /* SYNC_FLUSH: wait, outside the lock, for the group commit covering the record
     * (store._sync_wait, as the Python path does) */
    PyObject *status = self->ok;
    Py_INCREF(status);
    if (self->sync_wait != Py_None) {
        Py_DECREF(status);
        PyObject *o_end_abs = PyLong_FromLongLong(phy + total);
        PyObject *sargs[3] = {o_end_abs, wait, o_ts};
        status = o_end_abs ? PyObject_Vectorcall(self->sync_wait, sargs, 3, NULL) : NULL;
        Py_XDECREF(o_end_abs);
    }
    /* PutMessageResult(status, phy, total, qoff, ts, store_host, 1, None, "") */
    result = status ? self->result_type->tp_alloc(self->result_type, 9) : NULL;
    if (result == NULL) {
        Py_XDECREF(status);
        Py_DECREF(o_qoff);
        Py_DECREF(o_phy);
        Py_DECREF(o_ts);
        Py_DECREF(o_total);
        goto done;
    }
    PyTuple_SET_ITEM(result, 0, status);
    PyTuple_SET_ITEM(result, 1, o_phy);
    PyTuple_SET_ITEM(result, 2, o_total);
    PyTuple_SET_ITEM(result, 3, o_qoff);
    PyTuple_SET_ITEM(result, 4, o_ts);
    Py_INCREF(self->store_host);
    PyTuple_SET_ITEM(result, 5, self->store_host);
    PyTuple_SET_ITEM(result, 6, PyLong_FromLong(1));
    Py_INCREF(Py_None);
    PyTuple_SET_ITEM(result, 7, Py_None);
    Py_INCREF(self->empty_str);
    PyTuple_SET_ITEM(result, 8, self->empty_str);
    self->fast++;
    goto done;
fallback:
    result = slow(self, msg);
done:
    Py_XDECREF(topic);
    Py_XDECREF(tinfo);
    Py_XDECREF(body);
    Py_XDECREF(qid_obj);
    Py_XDECREF(pd);
    return result;
}

/* the fixed fields' codes and widths from a struct format such as ">iIiiiqqiq4siq4siiqi" */
static int parse_format(Putter *self, const char *fmt) {
    if (*fmt != '>') {
        PyErr_SetString(PyExc_ValueError, "head format must be big-endian ('>')");
        return -1;
    }
    fmt++;
    int n = 0;
    Py_ssize_t size = 0;
    while (*fmt) {
        Py_ssize_t count = 0;
        while (*fmt >= '0' && *fmt <= '9')
            count = count * 10 + (*fmt++ - '0');
        char c = *fmt++;
        Py_ssize_t w;
        switch (c) {
        case 'q': w = 8; break;
        case 'i': case 'I': w = 4; break;
        case 'h': w = 2; break;
        case 'b': w = 1; break;
        case 's': w = count; break;
        default:
            PyErr_Format(PyExc_ValueError, "unsupported code %c in head format", c);
            return -1;
        }
        if (c != 's' && count > 1) {
            PyErr_SetString(PyExc_ValueError, "repeat counts are not supported in the head format");
            return -1;
        }
        if (n >= MAX_FIELDS) {
            PyErr_SetString(PyExc_ValueError, "head format has too many fields");
            return -1;
        }
        self->codes[n] = c;
        self->widths[n] = w;
        size += w;
        n++;
    }
    if (n != F_COUNT || self->codes[F_BORN_ADDR] != 's' || self->codes[F_STORE_ADDR] != 's' || self->widths[F_BORN_ADDR] != self->born_addr_len ||
        self->widths[F_STORE_ADDR] != self->store_addr_len) {
        PyErr_Format(PyExc_ValueError, "head format has %d fields; expected record_packer(%zd, %zd)'s %d", n, self->born_addr_len, self->store_addr_len, F_COUNT);
        return -1;
    }
    if (size > MAX_HEAD) {
        PyErr_SetString(PyExc_ValueError, "head format is longer than MAX_HEAD");
        return -1;
    }
    self->nfields = n;
    self->head_size = size;
    return 0;
}

/* (address bytes, port) into addr/len/port */
static int host_arg(PyObject *host, const char *name, char *addr, Py_ssize_t *len, long long *port) {
    if (PyTuple_GET_SIZE(host) != 2 || !PyBytes_Check(PyTuple_GET_ITEM(host, 0)) || PyBytes_GET_SIZE(PyTuple_GET_ITEM(host, 0)) > 16) {
        PyErr_Format(PyExc_ValueError, "%s must be (address bytes, port)", name);
        return -1;
    }
    *len = PyBytes_GET_SIZE(PyTuple_GET_ITEM(host, 0));
    memcpy(addr, PyBytes_AS_STRING(PyTuple_GET_ITEM(host, 0)), *len);
    *port = PyLong_AsLongLong(PyTuple_GET_ITEM(host, 1));
    return (*port == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int Putter_init(Putter *self, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"commitlog", "pending", "pending_reqs", "fallback", "big_request", "sync_wait", "crc32", "isal_from", "fast_topics", "queue_offsets", "lock", "result_type", "ok", "store_host", "born_host",
                         "head_format", "max_body", "max_total", "big_body", "reput_batch", "blank_size", "message_type", "mapped_file_type", "clock", "properties", NULL};
    PyObject *commitlog, *pending, *pending_reqs, *fallback, *big_request, *sync_wait, *crc_fn;
    long long isal_from;
    PyObject *fast_topics, *queue_offsets, *lock, *result_type, *ok, *store_host, *born_host, *message_type, *mapped_file_type, *clock;
    const char *nv_sep, *prop_sep, *delay_name, *wait_name;
    const char *fmt;
    long long max_body, max_total, big_body, reput_batch, blank_size;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!O!OOOOLO!O!OO!OO!O!sLLLLLO!O!O(ssss)", kw, &commitlog, &PyList_Type, &pending, &PyList_Type, &pending_reqs, &fallback, &big_request, &sync_wait, &crc_fn, &isal_from, &PyDict_Type, &fast_topics, &PyDict_Type,
                                     &queue_offsets, &lock, &PyType_Type, &result_type, &ok, &PyTuple_Type, &store_host, &PyTuple_Type, &born_host, &fmt, &max_body,
                                     &max_total, &big_body, &reput_batch, &blank_size, &PyType_Type,
                                     &message_type, &PyType_Type, &mapped_file_type, &clock, &nv_sep, &prop_sep, &delay_name, &wait_name))
        return -1;
    if (strlen(nv_sep) != 1 || strlen(prop_sep) != 1 || strlen(delay_name) >= sizeof self->delay_name ||
        strlen(wait_name) >= sizeof self->wait_name) {
        PyErr_SetString(PyExc_ValueError, "properties: (one-byte separator, one-byte separator, DELAY name, WAIT name)");
        return -1;
    }
    self->nv_sep = nv_sep[0];
    self->prop_sep = prop_sep[0];
    self->delay_len = (Py_ssize_t)strlen(delay_name);
    memcpy(self->delay_name, delay_name, (size_t)self->delay_len);
    self->wait_len = (Py_ssize_t)strlen(wait_name);
    memcpy(self->wait_name, wait_name, (size_t)self->wait_len);
    if (!PyType_IsSubtype((PyTypeObject *)result_type, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "result_type must be a tuple subclass");
        return -1;
    }
    if (host_arg(store_host, "store_host", self->store_addr, &self->store_addr_len, &self->store_port) < 0 ||
        host_arg(born_host, "born_host", self->born_addr, &self->born_addr_len, &self->born_port) < 0)
        return -1;
    if (parse_format(self, fmt) < 0)
        return -1;
    /* a put checks an object's exact type before it reads a slot by offset */
    find_slots(&self->msg_slots, (PyTypeObject *)message_type, msg_names, M_COUNT, self->msg_offsets);
    find_slots(&self->file_slots, (PyTypeObject *)mapped_file_type, file_names, W_COUNT, self->file_offsets);
    self->vectorcall = (vectorcallfunc)Putter_vectorcall;
#define SET(field, value) do { PyObject *tmp = (PyObject *)self->field; Py_INCREF(value); self->field = (void *)(value); Py_XDECREF(tmp); } while (0)
    SET(commitlog, commitlog);
    SET(pending, pending);
    SET(pending_reqs, pending_reqs);
    SET(fallback, fallback);
    SET(big_request, big_request);
    SET(sync_wait, sync_wait);
    SET(crc_fn, crc_fn);
    SET(fast_topics, fast_topics);
    SET(queue_offsets, queue_offsets);
    SET(lock, lock);
    SET(result_type, result_type);
    SET(ok, ok);
    SET(store_host, store_host);
    SET(message_type, message_type);
    SET(clock, clock);
    SET(mapped_file_type, mapped_file_type);
#undef SET
    if (self->empty_str == NULL && (self->empty_str = PyUnicode_New(0, 0)) == NULL)
        return -1;
    self->max_body = max_body;
    self->max_total = max_total;
    self->big_body = big_body;
    self->isal_from = isal_from;
    self->reput_batch = reput_batch;
    self->blank_size = blank_size;
    self->shut_down = 0;
    return 0;
}

static int Putter_traverse(Putter *self, visitproc visit, void *arg) {
    Py_VISIT(self->commitlog);
    Py_VISIT(self->pending);
    Py_VISIT(self->pending_reqs);
    Py_VISIT(self->key_topic);
    for (int k = 0; k < KEY_CACHE; k++)
        Py_VISIT(self->keys[k]);
    Py_VISIT(self->fallback);
    Py_VISIT(self->big_request);
    Py_VISIT(self->sync_wait);
    Py_VISIT(self->crc_fn);
    Py_VISIT(self->fast_topics);
    Py_VISIT(self->queue_offsets);
    Py_VISIT(self->lock);
    Py_VISIT(self->result_type);
    Py_VISIT(self->ok);
    Py_VISIT(self->store_host);
    Py_VISIT(self->message_type);
    Py_VISIT(self->clock);
    Py_VISIT(self->mapped_file_type);
    return 0;
}

static int Putter_clear(Putter *self) {
    Py_CLEAR(self->commitlog);
    Py_CLEAR(self->pending);
    Py_CLEAR(self->pending_reqs);
    Py_CLEAR(self->key_topic);
    for (int k = 0; k < KEY_CACHE; k++)
        Py_CLEAR(self->keys[k]);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->big_request);
    Py_CLEAR(self->sync_wait);
    Py_CLEAR(self->crc_fn);
    Py_CLEAR(self->fast_topics);
    Py_CLEAR(self->queue_offsets);
    Py_CLEAR(self->lock);
    Py_CLEAR(self->result_type);
    Py_CLEAR(self->ok);
    Py_CLEAR(self->store_host);
    Py_CLEAR(self->empty_str);
    Py_CLEAR(self->message_type);
    Py_CLEAR(self->clock);
    Py_CLEAR(self->mapped_file_type);
    self->msg_slots.type = self->file_slots.type = NULL;
    return 0;
}

static void Putter_dealloc(Putter *self) {
    PyObject_GC_UnTrack(self);
    Putter_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef Putter_members[] = {
    {"fast", T_ULONGLONG, offsetof(Putter, fast), READONLY, "puts written here"},
    {"slow", T_ULONGLONG, offsetof(Putter, slow), READONLY, "puts handed to the Python path"},
    {"shut_down", T_BOOL, offsetof(Putter, shut_down), 0, "set by the store (under the put lock) when it shuts down: every put goes to fallback, which answers"},
    {NULL},
};

static PyTypeObject PutterType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "rmqlab.engine._put.Putter",
    .tp_basicsize = sizeof(Putter),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_vectorcall_offset = offsetof(Putter, vectorcall),
    .tp_doc = "Putter(commitlog, fallback, ...)(msg) -> PutMessageResult: MessageStore.put's common case in C "
              "(see rmqlab/engine/_put.c); anything else goes to fallback(msg).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Putter_init,
    .tp_dealloc = (destructor)Putter_dealloc,
    .tp_traverse = (traverseproc)Putter_traverse,
    .tp_clear = (inquiry)Putter_clear,
    .tp_call = PyVectorcall_Call,
    .tp_members = Putter_members,
};


/* ---- a producer's encoded batch (Java MessageExtEncoder.encode(MessageExtBatch) + doAppend) ----
 *
 * MessageStore._put_message_batch's common case: the batch body is a run of entries
 * (totalSize, magic, bodyCRC, flag, bodyLength, body, propertiesLength, properties;
 * rmqlab.format.batch), each becoming one record.  What the entries must be is
 * rmqlab.format.batch.BatchLayout.of's rule; batch_entries checks the same and answers
 * None for anything else, and the Python path then raises the error that names the byte.
 * The record's fixed fields come as a template the caller packed (rmqlab.format.encode.
 * record_packer, from the construct schema) with the offsets of the six fields that differ
 * record by record; the record's layout is not declared here.  Widths: totalSize, bodyCRC,
 * flag, bodyLength 4 bytes, queueOffset and physicalOffset 8 (the caller checks them).
 * An entry is read at fixed places (totalSize at 0, flag at 12, bodyLength at 16, the body
 * at 20): message_store checks them against the schema's (format.batch.ENTRY_FIELDS_AT)
 * when it imports this module. */

#define ENTRY_HEAD 20   /* totalSize, magic, bodyCRC, flag, bodyLength */
#define ENTRY_OVERHEAD (ENTRY_HEAD + 2)

static long long be32(const unsigned char *p) {
    return (int32_t)(((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3]);
}

/* entries of body: their count and largest bodyLength, or -1 when body is not a run of
 * well-formed entries (BatchLayout.of's checks) */
static Py_ssize_t walk_batch(const unsigned char *a, Py_ssize_t len, long long *max_body) {
    Py_ssize_t e = 0, n = 0;
    *max_body = 0;
    while (e < len) {
        if (len - e < ENTRY_OVERHEAD)
            return -1;
        long long total = be32(a + e), blen = be32(a + e + 16);
        if (total < ENTRY_OVERHEAD || total > len - e || blen < 0 || blen > total - ENTRY_OVERHEAD)
            return -1;
        const unsigned char *pl = a + e + ENTRY_HEAD + blen;
        long long plen = (int16_t)(((uint16_t)pl[0] << 8) | pl[1]);
        if (plen != total - ENTRY_OVERHEAD - blen)
            return -1;
        if (blen > *max_body)
            *max_body = blen;
        e += (Py_ssize_t)total;
        n++;
    }
    return n ? n : -1;
}

static PyObject *batch_entries(PyObject *mod, PyObject *arg) {
    Py_buffer b;
    if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) < 0)
        return NULL;
    long long max_body;
    Py_ssize_t n = walk_batch(b.buf, b.len, &max_body);
    PyBuffer_Release(&b);
    if (n < 0)
        Py_RETURN_NONE;
    return Py_BuildValue("(nL)", n, max_body);
}

static PyObject *write_batch(PyObject *mod, PyObject *args) {
    PyObject *dst_obj, *body_obj, *at_obj;
    Py_ssize_t pos;
    Py_buffer tmpl, tfield;
    long long qoff, phy;
    if (!PyArg_ParseTuple(args, "OnOy*Oy*LL", &dst_obj, &pos, &body_obj, &tmpl, &at_obj, &tfield, &qoff, &phy))
        return NULL;
    PyObject *out = NULL;
    Py_buffer dst = {0}, body = {0};
    Py_ssize_t at[6];
    if (!PyTuple_Check(at_obj) || PyTuple_GET_SIZE(at_obj) != 6) {
        PyErr_SetString(PyExc_TypeError, "at: a tuple of six field offsets");
        goto done;
    }
    for (int k = 0; k < 6; k++) {
        at[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(at_obj, k));
        if (at[k] == -1 && PyErr_Occurred())
            goto done;
        if (at[k] < 0 || at[k] + (k == 3 || k == 4 ? 8 : 4) > tmpl.len) {
            PyErr_SetString(PyExc_ValueError, "a field offset outside the template");
            goto done;
        }
    }
    if (PyObject_GetBuffer(dst_obj, &dst, PyBUF_WRITABLE) < 0)
        goto done;
    if (PyObject_GetBuffer(body_obj, &body, PyBUF_SIMPLE) < 0)
        goto done;
    const unsigned char *a = body.buf;
    long long max_body;
    Py_ssize_t n = walk_batch(a, body.len, &max_body);
    if (n < 0) {
        PyErr_SetString(PyExc_ValueError, "not a well-formed batch body");
        goto done;
    }
    Py_ssize_t P = tmpl.len, T = tfield.len;
    Py_ssize_t total = body.len + n * (P + 2 + T - ENTRY_OVERHEAD);
    if (pos < 0 || pos > dst.len || total > dst.len - pos) {
        PyErr_Format(PyExc_ValueError, "the batch's %zd bytes of records do not fit at %zd of %zd", total, pos, dst.len);
        goto done;
    }
    out = PyList_New(n);
    if (out == NULL)
        goto done;
    unsigned char *d = (unsigned char *)dst.buf + pos;
    Py_ssize_t e = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        long long etotal = be32(a + e), blen = be32(a + e + 16);
        Py_ssize_t tail = (Py_ssize_t)(etotal - ENTRY_HEAD - blen); /* propertiesLength + properties */
        Py_ssize_t size = P + (Py_ssize_t)blen + T + tail;
        const unsigned char *src_body = a + e + ENTRY_HEAD;
        memcpy(d, tmpl.buf, P);
        put_be(d + at[0], 4, size);
        put_be(d + at[1], 4, (long long)(crc32(0L, src_body, (uInt)blen) & 0x7FFFFFFF));
        memcpy(d + at[2], a + e + 12, 4);  /* flag, as the entry has it */
        put_be(d + at[3], 8, qoff + i);
        put_be(d + at[4], 8, phy);
        put_be(d + at[5], 4, blen);
        memcpy(d + P, src_body, (size_t)blen);
        memcpy(d + P + blen, tfield.buf, T);
        memcpy(d + P + blen + T, src_body + blen, (size_t)tail);
        PyObject *o = PyLong_FromLongLong(phy);
        if (o == NULL) {
            Py_CLEAR(out);
            goto done;
        }
        PyList_SET_ITEM(out, i, o);
        d += size;
        phy += size;
        e += (Py_ssize_t)etotal;
    }
done:
    if (dst.obj)
        PyBuffer_Release(&dst);
    if (body.obj)
        PyBuffer_Release(&body);
    PyBuffer_Release(&tmpl);
    PyBuffer_Release(&tfield);
    return out;
}

/* populate(mm, start, length): fault [start, start + length) of a writable mapping in for
 * writing (madvise MADV_POPULATE_WRITE, Linux 5.14+) with the GIL released: the pages a
 * put will write, faulted in before the put lock's holder copies into them
 * (CommitLogWriter.prefault).  Released because a page the host hands back costs its fault
 * (~3 us a KiB on the project's machines): the reput thread runs meanwhile.  The buffer
 * export held during the call keeps the mapping from being closed under it. */
static PyObject *populate(PyObject *mod, PyObject *args) {
    PyObject *mm;
    Py_ssize_t start, length;
    if (!PyArg_ParseTuple(args, "Onn", &mm, &start, &length))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(mm, &view, PyBUF_WRITABLE | PyBUF_SIMPLE) < 0)
        return NULL;
    if (start < 0 || length < 0 || start > view.len - length) {
        PyBuffer_Release(&view);
        PyErr_Format(PyExc_ValueError, "populate [%zd, %zd) is outside the mapping of %zd bytes", start, start + length, view.len);
        return NULL;
    }
#ifdef MADV_POPULATE_WRITE
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)view.buf + (uintptr_t)start, lo = a - a % (uintptr_t)page;
    int rc, err = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = madvise((void *)lo, (size_t)(a + (uintptr_t)length - lo), MADV_POPULATE_WRITE);
    if (rc != 0)
        err = errno;
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    if (rc != 0) {
        errno = err;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
#else
    PyBuffer_Release(&view);
    errno = EINVAL;
    return PyErr_SetFromErrno(PyExc_OSError);
#endif
}

static PyMethodDef module_methods[] = {
    {"populate", populate, METH_VARARGS,
     "populate(mm, start, length): fault [start, start + length) of a writable mapping in for writing (MADV_POPULATE_WRITE) with the GIL released"},
    {"batch_entries", batch_entries, METH_O,
     "batch_entries(body) -> (entries, largest bodyLength), or None when body is not a run of well-formed batch entries"},
    {"write_batch", write_batch, METH_VARARGS,
     "write_batch(dst, pos, body, template, at, topic_field, queue_offset, physical_offset) -> [physical offset of each record]: "
     "the batch's records written back to back at dst[pos:]"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_put", "MessageStore.put's common case in C (optional accelerator).", -1, module_methods,
};

PyMODINIT_FUNC PyInit__put(void) {
    static const char *msg_attr[M_COUNT] = {"topic", "body", "properties", "properties_raw", "queue_id", "flag", "sys_flag",
        "born_timestamp", "born_host", "store_timestamp", "store_host", "reconsume_times", "prepared_transaction_offset"};
    static const char *file_attr[W_COUNT] = {"wrote_position", "file_size", "populated", "file_from_offset", "mm", "fd"};
    for (int k = 0; k < M_COUNT; k++)
        if ((msg_names[k] = PyUnicode_InternFromString(msg_attr[k])) == NULL)
            return NULL;
    for (int k = 0; k < W_COUNT; k++)
        if ((file_names[k] = PyUnicode_InternFromString(file_attr[k])) == NULL)
            return NULL;
    struct { PyObject **slot; const char *name; } names[] = {
        {&s_files, "files"}, {&s_store_timestamp_attr, "store_timestamp"}, {&s_max_offset, "max_offset"},
        {&s_acquire, "acquire"}, {&s_release, "release"}, {&s_now_ms, "now_ms"},
    };
    for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
        if ((*names[k].slot = PyUnicode_InternFromString(names[k].name)) == NULL)
            return NULL;
    if (PyType_Ready(&PutterType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&PutterType);
    if (PyModule_AddObject(m, "Putter", (PyObject *)&PutterType) < 0) {
        Py_DECREF(&PutterType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
