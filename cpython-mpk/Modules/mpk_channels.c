/* mpk_channels.c -- the runtime's channels between threads are not function
 * code's to use.
 *
 * The Orchestrator hands a function's input to its warm thread, and the
 * result back, through queue.SimpleQueue objects (the runtime's worker pool,
 * the relay of sequential states).  Those queues are shared and reachable
 * from function code (threading.enumerate() -> a worker's thread -> its
 * queues); a thread a function starts could take the next item out of one
 * and read another function's result -- shared by then, so no key stops the
 * read -- and put it back.  A SimpleQueue offers no way to see its items but
 * get(), so refusing get and put on a shared queue to function code closes
 * the door: its own queues (made in its heap: a ThreadPoolExecutor it
 * starts) stay usable.
 *
 * How: the method descriptors of SimpleQueue's type are pointed at copies of
 * their PyMethodDef whose C function asks the guard first
 * (_PyMPK_GuardChannel, mpk_guard.c), then calls the original.  The
 * interpreter's specialised calls read ml_meth from the descriptor at each
 * call, so they go through the check too.  Bound methods made before
 * (q.get saved somewhere) keep the old definition: the runtime installs this
 * at start, before any function's code runs.
 *
 * Everything here runs with the GIL held. */
#ifdef Py_BUILD_CORE_BUILTIN
#  include "Python.h"             // first: it sets the feature macros
#endif
#include "mpk_guard.h"

#ifdef Py_BUILD_CORE_BUILTIN

typedef PyObject *(*fast_kw)(PyObject *, PyObject *const *, Py_ssize_t,
                             PyObject *);

enum { PUT, PUT_NOWAIT, GET, GET_NOWAIT, CHANNEL_METHODS };

static const struct {
    const char *name;
    const char *verb;
    int flags;
} wanted[CHANNEL_METHODS] = {
    [PUT] = {"put", "put into", METH_FASTCALL | METH_KEYWORDS},
    [PUT_NOWAIT] = {"put_nowait", "put into", METH_FASTCALL | METH_KEYWORDS},
    [GET] = {"get", "get from", METH_METHOD | METH_FASTCALL | METH_KEYWORDS},
    [GET_NOWAIT] = {"get_nowait", "get from",
                    METH_METHOD | METH_FASTCALL | METH_KEYWORDS},
};

static PyMethodDef guarded[CHANNEL_METHODS];
static PyCFunction original[CHANNEL_METHODS];

#define FAST_KW(index)                                                      \
    static PyObject *                                                       \
    guarded_##index(PyObject *self, PyObject *const *args, Py_ssize_t n,    \
                    PyObject *kwnames)                                      \
    {                                                                       \
        if (_PyMPK_GuardChannel(self, wanted[index].verb) < 0) {            \
            return NULL;                                                    \
        }                                                                   \
        return ((fast_kw)(void (*)(void))original[index])(self, args, n,    \
                                                          kwnames);         \
    }

#define METHOD(index)                                                       \
    static PyObject *                                                       \
    guarded_##index(PyObject *self, PyTypeObject *cls,                      \
                    PyObject *const *args, Py_ssize_t n, PyObject *kwnames) \
    {                                                                       \
        if (_PyMPK_GuardChannel(self, wanted[index].verb) < 0) {            \
            return NULL;                                                    \
        }                                                                   \
        return ((PyCMethod)(void (*)(void))original[index])(self, cls, args,\
                                                            n, kwnames);    \
    }

FAST_KW(PUT)
FAST_KW(PUT_NOWAIT)
METHOD(GET)
METHOD(GET_NOWAIT)

static PyCFunction wrappers[CHANNEL_METHODS] = {
    [PUT] = (PyCFunction)(void (*)(void))guarded_PUT,
    [PUT_NOWAIT] = (PyCFunction)(void (*)(void))guarded_PUT_NOWAIT,
    [GET] = (PyCFunction)(void (*)(void))guarded_GET,
    [GET_NOWAIT] = (PyCFunction)(void (*)(void))guarded_GET_NOWAIT,
};

int
_PyMPK_GuardQueueType(PyObject *type)
{
    PyMethodDescrObject *descr[CHANNEL_METHODS];

    if (!PyType_Check(type)) {
        PyErr_SetString(PyExc_TypeError, "guard_queue_type() needs a class");
        return -1;
    }
    /* Check all four before changing any: an unexpected layout (another
     * CPython) changes nothing. */
    for (int i = 0; i < CHANNEL_METHODS; i++) {
        PyObject *d = PyDict_GetItemString(
            ((PyTypeObject *)type)->tp_dict, wanted[i].name);   // borrowed
        if (d == NULL || !Py_IS_TYPE(d, &PyMethodDescr_Type)) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a C method",
                         ((PyTypeObject *)type)->tp_name, wanted[i].name);
            return -1;
        }
        descr[i] = (PyMethodDescrObject *)d;
        if (descr[i]->d_method != &guarded[i]
            && descr[i]->d_method->ml_flags != wanted[i].flags)
        {
            PyErr_Format(PyExc_TypeError, "%s.%s has unexpected flags 0x%x",
                         ((PyTypeObject *)type)->tp_name, wanted[i].name,
                         descr[i]->d_method->ml_flags);
            return -1;
        }
    }
    for (int i = 0; i < CHANNEL_METHODS; i++) {
        if (descr[i]->d_method == &guarded[i]) {
            continue;                   /* installed before */
        }
        if (original[i] != NULL) {
            PyErr_SetString(PyExc_RuntimeError,
                            "guard_queue_type(): another class was guarded");
            return -1;
        }
        guarded[i] = *descr[i]->d_method;
        original[i] = guarded[i].ml_meth;
        guarded[i].ml_meth = wrappers[i];
        descr[i]->d_method = &guarded[i];
    }
    return 0;
}

#else /* !Py_BUILD_CORE_BUILTIN: an ordinary extension for tests */

int
_PyMPK_GuardQueueType(PyObject *type)
{
    (void)type;
    PyErr_SetString(PyExc_RuntimeError,
                    "this _faastlane was built as an extension module: only the "
                    "cpython-mpk runtime has the write guard");
    return -1;
}

#endif /* Py_BUILD_CORE_BUILTIN */
