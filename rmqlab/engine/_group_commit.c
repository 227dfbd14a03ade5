/*
 * rmqlab.engine._group_commit — SYNC_FLUSH group commit (Java
 * CommitLog.GroupCommitService) with a flusher thread that never takes the GIL.
 *
 * Why C: with the flusher as a Python thread, every force ends with that thread
 * queueing for the GIL behind the producers that are appending, then releasing the
 * waiting producers one Python lock at a time; with 8 producers the disk sat idle
 * ~40% of the time (forces of ~70 us, cycles of ~135 us).  Here the flusher is a
 * plain pthread: it forces, publishes how far the log is on disk, wakes the
 * producers that force covers, and starts the next force as soon as one is asked
 * for — the disk is kept busy (~85% of the time with 8 producers) while the woken
 * producers take turns on the GIL to append.  Tried and dropped (A/B in one process,
 * no gain beyond noise): waiting for the whole group before forcing (slower: 8
 * producers append one after the other on the GIL for longer than a force takes), and
 * waking producers after letting go of the mutex (semaphores; +2% disk busy, a
 * subtler protocol).
 *
 * What it owns, and what it does not:
 * - The protocol only: how far forces have been asked for (requested) and done
 *   (flushed), with the store timestamp of the newest record each covers (for the
 *   checkpoint's physicMsgTimestamp); producers wait with the GIL released.
 * - Which files to force comes from the commitlog writer, which registers each file
 *   (its start offset and descriptor, which this module dup()s so the writer can
 *   close its own at any time) and unregisters it when it is deleted or closed.  A
 *   force covers every registered file overlapping [flushed, requested), oldest
 *   first, as Java's MappedFileQueue.flush walks from flushedWhere.
 * - A failed fdatasync stops the service: its waiters, and every later one, get
 *   False (the store answers FLUSH_DISK_TIMEOUT, as Java does when a flush fails);
 *   `error` says which errno and which file.
 * The Python fallback, with the same interface, is rmqlab.engine.flush.GroupCommitService.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { NEW, RUNNING, STOPPING, HALTING, FINISHED };

typedef struct {
    long long start;
    int fd;      /* our dup() of the writer's descriptor */
    int busy;    /* being forced now */
    int dropped; /* unregistered while busy: the flusher closes it afterwards */
} File;

/* A producer waiting for a force: on its own stack, with a condition of its own, so
 * that a force wakes exactly the producers it covers (with one shared condition,
 * the producers already waiting for the next force woke too, only to wait again:
 * four needless context switches per force with 8 producers on two cores). */
typedef struct Waiter {
    long long offset;
    pthread_cond_t cv;
    int released;
    struct Waiter *next;
} Waiter;

typedef struct {
    PyObject_HEAD
    pthread_mutex_t mu;
    pthread_cond_t work; /* the flusher waits here for requests */
    pthread_cond_t done; /* stop()/halt() wait here for the flusher to finish */
    pthread_condattr_t cattr; /* CLOCK_MONOTONIC, for every waiter's condition */
    Waiter *waiters;
    int initialised;
    long long file_size;
    long long requested, requested_ts;
    long long flushed, flushed_ts;
    unsigned long long forces;
    long long force_ns; /* time spent forcing, for the benchmark: how busy the disk was kept */
    File *files;
    Py_ssize_t nfiles, cap;
    int err;             /* errno of the failed force, or ENOENT for a gap in the files */
    long long err_start; /* start offset of the file it failed on */
    int state;
    int joined;
    double force_delay; /* seconds slept before each force: a slow disk, for lessons and tests */
    pthread_t thread;
} GroupCommit;

static void deadline_after(struct timespec *ts, double seconds) {
    clock_gettime(CLOCK_MONOTONIC, ts);
    if (seconds < 0)
        seconds = 0;
    if (seconds > 1e7)
        seconds = 1e7;
    long long ns = (long long)(seconds * 1e9) + ts->tv_nsec;
    ts->tv_sec += ns / 1000000000LL;
    ts->tv_nsec = ns % 1000000000LL;
}

/* Wake the waiters the forces so far cover (all of them when `everyone`). */
static void release_waiters(GroupCommit *g, int everyone) {
    Waiter **pp = &g->waiters;
    while (*pp) {
        Waiter *w = *pp;
        if (everyone || w->offset <= g->flushed) {
            *pp = w->next;
            w->released = 1;
            pthread_cond_signal(&w->cv);
        } else {
            pp = &w->next;
        }
    }
}

/* The file registered at `start`: the one being forced (`busy`), or else the one
 * still registered (not dropped); a dropped file and its re-registration may both be
 * in the table until the force using the first ends. */
static Py_ssize_t find_file(GroupCommit *g, long long start, int busy) {
    for (Py_ssize_t i = 0; i < g->nfiles; i++)
        if (g->files[i].start == start && (busy ? g->files[i].busy : !g->files[i].dropped))
            return i;
    return -1;
}

static void drop_at(GroupCommit *g, Py_ssize_t i) {
    close(g->files[i].fd);
    memmove(&g->files[i], &g->files[i + 1], (size_t)(g->nfiles - i - 1) * sizeof(File));
    g->nfiles--;
}

/* The flusher: wait for a request, force the files it covers outside the mutex,
 * publish, wake the producers.  Called with nothing held; never touches Python. */
static void *flusher(void *arg) {
    GroupCommit *g = (GroupCommit *)arg;
    int *fds = NULL;
    long long *starts = NULL;
    Py_ssize_t room = 0;
    pthread_mutex_lock(&g->mu);
    for (;;) {
        while (g->state == RUNNING && g->requested <= g->flushed)
            pthread_cond_wait(&g->work, &g->mu);
        if (g->state == HALTING || g->requested <= g->flushed)
            break; /* halted, or stopping with nothing left to force */
        long long from = g->flushed, target = g->requested, ts = g->requested_ts;
        /* the files overlapping [from, target), which must leave no gap */
        if (room < g->nfiles) {
            int *nf = realloc(fds, (size_t)g->nfiles * sizeof(int));
            long long *ns = nf ? realloc(starts, (size_t)g->nfiles * sizeof(long long)) : NULL;
            if (nf)
                fds = nf;
            if (ns)
                starts = ns;
            if (!nf || !ns) {
                g->err = ENOMEM;
                g->err_start = from;
                break;
            }
            room = g->nfiles;
        }
        Py_ssize_t n = 0;
        long long covered = from;
        for (Py_ssize_t i = 0; i < g->nfiles && covered < target; i++) {
            File *f = &g->files[i];
            if (f->dropped || f->start + g->file_size <= covered)
                continue;
            if (f->start > covered)
                break; /* a gap: reported below */
            f->busy = 1;
            fds[n] = f->fd;
            starts[n++] = f->start;
            covered = f->start + g->file_size;
        }
        int failed = 0;
        long long failed_start = covered;
        if (covered < target)
            failed = ENOENT;
        double delay = g->force_delay;
        pthread_mutex_unlock(&g->mu);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        if (delay > 0) {
            struct timespec d = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
            nanosleep(&d, NULL);
        }
        for (Py_ssize_t k = 0; k < n && !failed; k++) {
            if (fdatasync(fds[k]) != 0) {
                failed = errno;
                failed_start = starts[k];
            }
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        pthread_mutex_lock(&g->mu);
        g->force_ns += (t1.tv_sec - t0.tv_sec) * 1000000000LL + (t1.tv_nsec - t0.tv_nsec);
        for (Py_ssize_t k = 0; k < n; k++) {
            Py_ssize_t i = find_file(g, starts[k], 1);
            if (i < 0)
                continue;
            g->files[i].busy = 0;
            if (g->files[i].dropped)
                drop_at(g, i);
        }
        if (failed) {
            g->err = failed;
            g->err_start = failed_start;
            break;
        }
        if (target > g->flushed)
            g->flushed = target;
        if (ts > g->flushed_ts)
            g->flushed_ts = ts;
        g->forces++;
        release_waiters(g, 0);
    }
    g->state = FINISHED;
    release_waiters(g, 1);
    pthread_cond_broadcast(&g->done);
    pthread_mutex_unlock(&g->mu);
    free(fds);
    free(starts);
    return NULL;
}

static int GroupCommit_init(GroupCommit *g, PyObject *args, PyObject *kwargs) {
    static char *kw[] = {"file_size", "flushed", NULL};
    long long file_size, flushed;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "LL", kw, &file_size, &flushed))
        return -1;
    if (g->initialised) {
        PyErr_SetString(PyExc_RuntimeError, "GroupCommit is already initialised");
        return -1;
    }
    if (file_size <= 0 || flushed < 0) {
        PyErr_SetString(PyExc_ValueError, "file_size must be > 0 and flushed >= 0");
        return -1;
    }
    pthread_condattr_init(&g->cattr);
    pthread_condattr_setclock(&g->cattr, CLOCK_MONOTONIC);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->work, &g->cattr);
    pthread_cond_init(&g->done, &g->cattr);
    g->initialised = 1;
    g->file_size = file_size;
    g->requested = g->flushed = flushed;
    g->state = NEW;
    g->joined = 1;
    return 0;
}

/* Ask the flusher to finish (STOPPING: after forcing what was asked; HALTING: now)
 * and wait up to timeout_s for it, the GIL released.  True when it has finished. */
static int finish(GroupCommit *g, int how, double timeout_s) {
    int finished;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&g->mu);
    if (g->state == NEW)
        g->state = FINISHED;
    if (g->state < how)
        g->state = how;
    pthread_cond_broadcast(&g->work);
    struct timespec dl;
    deadline_after(&dl, timeout_s);
    while (g->state != FINISHED)
        if (pthread_cond_timedwait(&g->done, &g->mu, &dl) == ETIMEDOUT)
            break;
    finished = g->state == FINISHED;
    pthread_mutex_unlock(&g->mu);
    if (finished && !g->joined) {
        pthread_join(g->thread, NULL);
        g->joined = 1;
    }
    Py_END_ALLOW_THREADS
    return finished;
}

static void GroupCommit_dealloc(GroupCommit *g) {
    if (g->initialised) {
        if (!g->joined)
            finish(g, HALTING, 1e7); /* the flusher uses this struct: it must be gone */
        for (Py_ssize_t i = 0; i < g->nfiles; i++)
            close(g->files[i].fd);
        free(g->files);
        pthread_mutex_destroy(&g->mu);
        pthread_cond_destroy(&g->work);
        pthread_cond_destroy(&g->done);
        pthread_condattr_destroy(&g->cattr);
    }
    Py_TYPE(g)->tp_free((PyObject *)g);
}

#define CHECK_INIT(g)                                                                  \
    if (!(g)->initialised) {                                                            \
        PyErr_SetString(PyExc_RuntimeError, "GroupCommit.__init__ was not called");   \
        return NULL;                                                                    \
    }

static PyObject *GroupCommit_start(GroupCommit *g, PyObject *noargs) {
    CHECK_INIT(g);
    pthread_mutex_lock(&g->mu);
    int state = g->state;
    pthread_mutex_unlock(&g->mu);
    if (state != NEW) {
        PyErr_SetString(PyExc_RuntimeError, "the group commit service was already started");
        return NULL;
    }
    g->state = RUNNING;
    int rc = pthread_create(&g->thread, NULL, flusher, g);
    if (rc != 0) {
        g->state = FINISHED;
        errno = rc;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    g->joined = 0;
    Py_RETURN_NONE;
}

static void note_request(GroupCommit *g, long long offset, long long ts) {
    if (offset > g->requested)
        g->requested = offset;
    if (ts > g->requested_ts)
        g->requested_ts = ts; /* a record at or before `requested`: on disk with it */
    pthread_cond_signal(&g->work);
}

static PyObject *GroupCommit_wait_for(GroupCommit *g, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_INIT(g);
    long long offset, ts = 0;
    double timeout_s;
    if (nargs < 2 || nargs > 3) {
        PyErr_SetString(PyExc_TypeError, "wait_for(offset, timeout_s, store_timestamp=0)");
        return NULL;
    }
    offset = PyLong_AsLongLong(args[0]);
    timeout_s = PyFloat_AsDouble(args[1]);
    if (nargs == 3)
        ts = PyLong_AsLongLong(args[2]);
    if (PyErr_Occurred())
        return NULL;
    int ok;
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock(&g->mu);
    ok = g->flushed >= offset;
    if (!ok && g->state == RUNNING && !g->err) {
        Waiter me = {offset, PTHREAD_COND_INITIALIZER, 0, g->waiters};
        pthread_cond_init(&me.cv, &g->cattr);
        g->waiters = &me;
        note_request(g, offset, ts);
        struct timespec dl;
        deadline_after(&dl, timeout_s);
        while (!me.released)
            if (pthread_cond_timedwait(&me.cv, &g->mu, &dl) == ETIMEDOUT)
                break;
        if (!me.released) { /* timed out: leave the list */
            Waiter **pp = &g->waiters;
            while (*pp && *pp != &me)
                pp = &(*pp)->next;
            if (*pp)
                *pp = me.next;
        }
        pthread_cond_destroy(&me.cv);
        ok = g->flushed >= offset;
    }
    pthread_mutex_unlock(&g->mu);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong(ok);
}

static PyObject *GroupCommit_request(GroupCommit *g, PyObject *const *args, Py_ssize_t nargs) {
    CHECK_INIT(g);
    if (nargs < 1 || nargs > 2) {
        PyErr_SetString(PyExc_TypeError, "request(offset, store_timestamp=0)");
        return NULL;
    }
    long long offset = PyLong_AsLongLong(args[0]);
    long long ts = nargs == 2 ? PyLong_AsLongLong(args[1]) : 0;
    if (PyErr_Occurred())
        return NULL;
    pthread_mutex_lock(&g->mu); /* held by the flusher only for bookkeeping */
    note_request(g, offset, ts);
    pthread_mutex_unlock(&g->mu);
    Py_RETURN_NONE;
}

static PyObject *GroupCommit_add_file(GroupCommit *g, PyObject *args) {
    CHECK_INIT(g);
    long long start;
    int fd;
    if (!PyArg_ParseTuple(args, "Li", &start, &fd))
        return NULL;
    int mine = dup(fd);
    if (mine < 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    pthread_mutex_lock(&g->mu);
    Py_ssize_t at = g->nfiles;
    int clash = find_file(g, start, 0) >= 0;
    if (!clash && g->nfiles == g->cap) {
        Py_ssize_t cap = g->cap ? g->cap * 2 : 8;
        File *nf = realloc(g->files, (size_t)cap * sizeof(File));
        if (nf == NULL) {
            pthread_mutex_unlock(&g->mu);
            close(mine);
            return PyErr_NoMemory();
        }
        g->files = nf;
        g->cap = cap;
    }
    if (!clash) {
        while (at > 0 && g->files[at - 1].start > start) /* kept in offset order */
            at--;
        memmove(&g->files[at + 1], &g->files[at], (size_t)(g->nfiles - at) * sizeof(File));
        g->files[at] = (File){start, mine, 0, 0};
        g->nfiles++;
    }
    pthread_mutex_unlock(&g->mu);
    if (clash) {
        close(mine);
        PyErr_Format(PyExc_ValueError, "a file starting at offset %lld is already registered", start);
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *GroupCommit_remove_file(GroupCommit *g, PyObject *arg) {
    CHECK_INIT(g);
    long long start = PyLong_AsLongLong(arg);
    if (start == -1 && PyErr_Occurred())
        return NULL;
    pthread_mutex_lock(&g->mu);
    Py_ssize_t i = find_file(g, start, 0); /* not one already removed, closed after its force */
    if (i >= 0) {
        if (g->files[i].busy)
            g->files[i].dropped = 1;
        else
            drop_at(g, i);
    }
    pthread_mutex_unlock(&g->mu);
    return PyBool_FromLong(i >= 0);
}

/* stop(timeout_s=10.0) and halt(timeout_s=10.0) */
static PyObject *finish_method(GroupCommit *g, PyObject *const *args, Py_ssize_t nargs, int how) {
    CHECK_INIT(g);
    double timeout_s = nargs ? PyFloat_AsDouble(args[0]) : 10.0;
    if (PyErr_Occurred())
        return NULL;
    return PyBool_FromLong(finish(g, how, timeout_s));
}

static PyObject *GroupCommit_stop(GroupCommit *g, PyObject *const *args, Py_ssize_t nargs) {
    return finish_method(g, args, nargs, STOPPING);
}

static PyObject *GroupCommit_halt(GroupCommit *g, PyObject *const *args, Py_ssize_t nargs) {
    return finish_method(g, args, nargs, HALTING);
}

#define LOCKED_GETTER(name, expr)                                                      \
    static PyObject *GroupCommit_get_##name(GroupCommit *g, void *c) {                  \
        CHECK_INIT(g);                                                                  \
        pthread_mutex_lock(&g->mu);                                                     \
        PyObject *r = (expr);                                                           \
        pthread_mutex_unlock(&g->mu);                                                   \
        return r;                                                                       \
    }
LOCKED_GETTER(flushed, PyLong_FromLongLong(g->flushed))
LOCKED_GETTER(flushed_timestamp, PyLong_FromLongLong(g->flushed_ts))
LOCKED_GETTER(requested, PyLong_FromLongLong(g->requested))
LOCKED_GETTER(flushes, PyLong_FromUnsignedLongLong(g->forces))
LOCKED_GETTER(force_seconds, PyFloat_FromDouble(g->force_ns / 1e9))
LOCKED_GETTER(alive, PyBool_FromLong(g->state == RUNNING || g->state == STOPPING || g->state == HALTING))
LOCKED_GETTER(files, PyLong_FromSsize_t(g->nfiles))

static PyObject *GroupCommit_get_force_delay(GroupCommit *g, void *c) {
    CHECK_INIT(g);
    pthread_mutex_lock(&g->mu);
    double d = g->force_delay;
    pthread_mutex_unlock(&g->mu);
    return PyFloat_FromDouble(d);
}

static int GroupCommit_set_force_delay(GroupCommit *g, PyObject *value, void *c) {
    double d = value ? PyFloat_AsDouble(value) : -1.0;
    if (d == -1.0 && PyErr_Occurred())
        return -1;
    if (!g->initialised || d < 0 || d > 3600) {
        PyErr_SetString(PyExc_ValueError, "force_delay is seconds, 0 to 3600");
        return -1;
    }
    pthread_mutex_lock(&g->mu);
    g->force_delay = d;
    pthread_mutex_unlock(&g->mu);
    return 0;
}

static PyObject *GroupCommit_get_error(GroupCommit *g, void *c) {
    CHECK_INIT(g);
    pthread_mutex_lock(&g->mu);
    int err = g->err;
    long long at = g->err_start;
    pthread_mutex_unlock(&g->mu);
    if (!err)
        Py_RETURN_NONE;
    return Py_BuildValue("(iL)", err, at);
}

static PyMethodDef GroupCommit_methods[] = {
    {"start", (PyCFunction)GroupCommit_start, METH_NOARGS, "Start the flusher thread."},
    {"wait_for", (PyCFunction)(void (*)(void))GroupCommit_wait_for, METH_FASTCALL,
     "wait_for(offset, timeout_s, store_timestamp=0) -> bool: block (GIL released) until\n"
     "everything below offset is forced; False on timeout, failure or a stopped service."},
    {"request", (PyCFunction)(void (*)(void))GroupCommit_request, METH_FASTCALL,
     "request(offset, store_timestamp=0): ask for a force without waiting (WAIT=false)."},
    {"add_file", (PyCFunction)GroupCommit_add_file, METH_VARARGS,
     "add_file(start, fd): register a commitlog file (its descriptor is dup()ed)."},
    {"remove_file", (PyCFunction)GroupCommit_remove_file, METH_O,
     "remove_file(start) -> bool: forget a file (closed after a force using it)."},
    {"stop", (PyCFunction)(void (*)(void))GroupCommit_stop, METH_FASTCALL,
     "stop(timeout_s=10.0) -> bool: force what was asked for, then end the thread."},
    {"halt", (PyCFunction)(void (*)(void))GroupCommit_halt, METH_FASTCALL,
     "halt(timeout_s=10.0) -> bool: end the thread without another force (a crash)."},
    {NULL}};

static PyGetSetDef GroupCommit_getset[] = {
    {"flushed", (getter)GroupCommit_get_flushed, NULL, "how far the commitlog is forced", NULL},
    {"flushed_timestamp", (getter)GroupCommit_get_flushed_timestamp, NULL,
     "store timestamp of the newest record a force covered (physicMsgTimestamp)", NULL},
    {"requested", (getter)GroupCommit_get_requested, NULL, "how far forces were asked for", NULL},
    {"flushes", (getter)GroupCommit_get_flushes, NULL, "forces done (group commits)", NULL},
    {"force_seconds", (getter)GroupCommit_get_force_seconds, NULL, "time spent forcing (fdatasync), in seconds", NULL},
    {"alive", (getter)GroupCommit_get_alive, NULL, "the flusher thread is running", NULL},
    {"files", (getter)GroupCommit_get_files, NULL, "registered files", NULL},
    {"force_delay", (getter)GroupCommit_get_force_delay, (setter)GroupCommit_set_force_delay,
     "seconds to sleep before each force: a slow disk, for lessons and tests (default 0)", NULL},
    {"error", (getter)GroupCommit_get_error, NULL, "None, or (errno, file start offset) of a failed force", NULL},
    {NULL}};

static PyTypeObject GroupCommitType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "rmqlab.engine._group_commit.GroupCommit",
    .tp_basicsize = sizeof(GroupCommit),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "GroupCommit(file_size, flushed): SYNC_FLUSH group commit with a GIL-free flusher thread.",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)GroupCommit_init,
    .tp_dealloc = (destructor)GroupCommit_dealloc,
    .tp_methods = GroupCommit_methods,
    .tp_getset = GroupCommit_getset,
};

static struct PyModuleDef moduledef = {PyModuleDef_HEAD_INIT, "_group_commit",
                                       "SYNC_FLUSH group commit with a GIL-free flusher thread.", -1, NULL};

PyMODINIT_FUNC PyInit__group_commit(void) {
    if (PyType_Ready(&GroupCommitType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&moduledef);
    if (m == NULL)
        return NULL;
    Py_INCREF(&GroupCommitType);
    if (PyModule_AddObject(m, "GroupCommit", (PyObject *)&GroupCommitType) < 0) {
        Py_DECREF(&GroupCommitType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
