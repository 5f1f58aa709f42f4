/* _faastlanemodule.c -- the Python binding of Faastlane's protection domains.
 *
 * A thin layer: every decision is in mpk_domain.c; this file turns handles
 * into `Domain` objects and status codes into exceptions.  Built into the
 * cpython-mpk interpreter as the builtin module `_faastlane`; the same source
 * also builds as an ordinary extension (tests/mpk/build_extension.py).
 */
#define PY_SSIZE_T_CLEAN
#include "Python.h"

#include "faastlane_mpk.h"
#include "mpk_caches.h"
#include "mpk_exit.h"
#include "mpk_guard.h"
#include "mpk_heap.h"

#include <errno.h>

static PyObject *DomainError;
static PyObject *GateError;
static PyObject *DomainLimitError;
static PyObject *SealedError;

typedef struct {
    PyObject_HEAD
    _PyMPK_Handle handle;
    int alive;
    int registered;     /* slot_objects holds a reference to this object */
} DomainObject;

static PyTypeObject Domain_Type;

/* The Domain object of each live slot (strong references: a domain is an
 * explicit resource, alive until destroy(), like an open file).  Guarded by
 * the GIL. */
static DomainObject *slot_objects[_PyMPK_SLOT_COUNT];

/* ---------------------------------------------------------------------- */
/* Status codes to exceptions                                             */

/* Refuse `what` to a sealed thread (function code, Domain.run_sealed): the
 * domain API is the runtime's, not the functions'. */
static PyObject *
refuse_sealed(const char *what)
{
    PyErr_Format(SealedError, "cannot %s: this thread runs sealed function "
                 "code (domain slot %d); the runtime's domain API is closed to "
                 "it", what, _PyMPK_SealedSlot());
    return NULL;
}

static int
is_sealed(void)
{
    return _PyMPK_SealedSlot() >= 0;
}

static PyObject *
raise_status(_PyMPK_Status status, const char *action, DomainObject *self)
{
    int slot = self != NULL ? self->handle.slot : -1;
    int current = _PyMPK_CurrentSlot();

    switch (status) {
    case _PyMPK_OK:
        break;
    case _PyMPK_ERR_LIMIT:
        PyErr_Format(DomainLimitError, "cannot %s: %s", action,
                     _PyMPK_LastError());
        break;
    case _PyMPK_ERR_STALE:
        PyErr_Format(strcmp(action, "enter") == 0 ? GateError : DomainError,
                     "cannot %s domain (slot %d): it was destroyed",
                     action, slot);
        break;
    case _PyMPK_ERR_NESTED:
        PyErr_Format(GateError,
                     "cannot enter domain (slot %d): this thread is already "
                     "inside domain (slot %d); domains do not nest, exit "
                     "first", slot, current);
        break;
    case _PyMPK_ERR_NOT_ENTERED:
        if (current < 0) {
            PyErr_Format(GateError, "cannot exit domain (slot %d): this "
                         "thread is not inside any domain", slot);
        }
        else {
            PyErr_Format(GateError, "cannot exit domain (slot %d): this "
                         "thread is inside domain (slot %d)", slot, current);
        }
        break;
    case _PyMPK_ERR_BUSY:
        PyErr_Format(GateError, "cannot destroy domain (slot %d): %s",
                     slot, _PyMPK_LastError());
        break;
    case _PyMPK_ERR_NOSPACE:
        PyErr_Format(PyExc_MemoryError, "cannot %s in domain (slot %d): %s",
                     action, slot, _PyMPK_LastError());
        break;
    case _PyMPK_ERR_INVALID:
        PyErr_Format(PyExc_ValueError, "cannot %s: %s", action,
                     _PyMPK_LastError());
        break;
    case _PyMPK_ERR_SEALED:
        return refuse_sealed(action);
    case _PyMPK_ERR_SYSTEM: {
        PyObject *args = Py_BuildValue("(is)", _PyMPK_LastErrno(),
                                       _PyMPK_LastError());
        if (args != NULL) {
            PyErr_SetObject(PyExc_OSError, args);
            Py_DECREF(args);
        }
        break;
    }
    }
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* Domain                                                                 */

static PyObject *
Domain_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"private_heap", NULL};
    DomainObject *self;
    _PyMPK_Handle handle;
    _PyMPK_Status status;
    int private_heap = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$p:Domain", kwlist,
                                     &private_heap))
    {
        return NULL;
    }
    self = (DomainObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    status = _PyMPK_Create(&handle);
    Py_END_ALLOW_THREADS
    if (status != _PyMPK_OK) {
        Py_DECREF(self);
        return raise_status(status, "create a domain", NULL);
    }
    if (private_heap) {
        const char *why = NULL;
        if (_PyMPK_HeapEnable(handle, &why) != 0) {
            (void)_PyMPK_Destroy(handle);
            Py_DECREF(self);
            PyErr_Format(DomainError, "cannot give the domain a private "
                         "heap: %s", why);
            return NULL;
        }
    }
    self->handle = handle;
    self->alive = 1;
    /* The slot's previous owner may not have cleared its entry yet (its
     * destroy released the GIL): it drops its own reference, see below. */
    Py_INCREF(self);
    self->registered = 1;
    slot_objects[handle.slot] = self;
    return (PyObject *)self;
}

static void
Domain_dealloc(DomainObject *self)
{
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
domain_info(DomainObject *self, _PyMPK_DomainInfo *info)
{
    if (!self->alive || _PyMPK_Info(self->handle, info) != _PyMPK_OK) {
        return 0;
    }
    return 1;
}

static PyObject *
Domain_enter(DomainObject *self, PyObject *Py_UNUSED(ignored))
{
    _PyMPK_Status status = _PyMPK_Enter(self->handle);
    if (status != _PyMPK_OK) {
        return raise_status(status, "enter", self);
    }
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *
Domain_exit(DomainObject *self, PyObject *Py_UNUSED(ignored))
{
    _PyMPK_Status status = _PyMPK_Exit(self->handle);
    if (status != _PyMPK_OK) {
        return raise_status(status, "exit", self);
    }
    Py_RETURN_NONE;
}

/* What an argument of a sealed call needs at the entry gate: nothing (shared,
 * or the domain's own), a copy (a leaf in the hand-off heap, which the
 * function cannot read), or a refusal (anything else of another heap: the
 * callable would fault on it). */
enum { ARG_AS_IS, ARG_COPY, ARG_REFUSED };

static int
sealed_arg(DomainObject *self, PyObject *arg)
{
    int slot = _PyMPK_SlotOf(arg);
    if (slot < 0 || slot == self->handle.slot) {
        return ARG_AS_IS;
    }
    if (slot == _PyMPK_HandoffSlot()
        && (PyFloat_CheckExact(arg) || PyLong_CheckExact(arg)
            || PyUnicode_CheckExact(arg)))
    {
        return ARG_COPY;
    }
    return ARG_REFUSED;
}

/* The invoker's one gate for function code: enter, seal, call
 * callable(*args), make sure what leaves is shared, unseal, exit.  Only this
 * C frame unseals, so nothing the callable runs can leave the domain or enter
 * another.  With `input` (run_sealed_on), the callable gets first the
 * domain's own copy of it, made right after the entry gate: an input in the
 * hand-off domain's heap is read with that key granted for the copy only,
 * which runs no Python code.  The other arguments are checked before the
 * gate: one of another domain's heap is refused, a number or string in the
 * hand-off heap (the runtime's bookkeeping, made while it handles data in
 * flight) is copied in the same window.  METH_FASTCALL: no argument tuple
 * is made inside. */
static PyObject *
run_sealed(DomainObject *self, PyObject *callable, PyObject *const *args,
           Py_ssize_t nargs, PyObject *input)
{
    PyObject *result, *small[8], **call_args = small;
    Py_ssize_t first = input != NULL, n = nargs + first, copies = 0;
    _PyMPK_Status status;

    for (Py_ssize_t i = 0; i < nargs; i++) {
        int need = sealed_arg(self, args[i]);
        if (need == ARG_REFUSED) {
            PyErr_Format(PyExc_TypeError, "argument %zd of a sealed call (%T) "
                         "lives in another domain's private heap", i + 1, args[i]);
            return NULL;
        }
        copies += need == ARG_COPY;
    }
    if ((input != NULL || copies != 0) && n > (Py_ssize_t)Py_ARRAY_LENGTH(small)) {
        /* Made before the gate: the shared heap's, freed outside. */
        call_args = PyMem_Malloc((size_t)n * sizeof(PyObject *));
        if (call_args == NULL) {
            return PyErr_NoMemory();
        }
    }
    if (input != NULL) {
        Py_XDECREF(_PyMPK_TakeHandedOff());   /* a stale one is not this call's */
    }
    status = _PyMPK_EnterSealed(self->handle);
    if (status != _PyMPK_OK) {
        if (call_args != small) {   /* not yet args: that is only set inside */
            PyMem_Free(call_args);
        }
        return raise_status(status, "enter", self);
    }
    int ready = 1, made = input != NULL || copies != 0;
    if (!made) {
        call_args = (PyObject **)args;
    }
    else {
        /* The array holds a reference to each argument: copies are new. */
        memcpy(call_args + first, args, (size_t)nargs * sizeof(PyObject *));
        _PyMPK_OpenHandoff(1);
        for (Py_ssize_t i = first; ready && i < n; i++) {
            if (sealed_arg(self, call_args[i]) == ARG_COPY) {
                call_args[i] = _PyMPK_PromoteJSON(call_args[i]);
                ready = call_args[i] != NULL;
                if (!ready) {
                    n = i;   /* the copies made so far are released below */
                }
            }
            else {
                Py_INCREF(call_args[i]);
            }
        }
        if (ready && input != NULL) {
            call_args[0] = _PyMPK_CopyIn(input, self->handle.slot,
                                         self->handle.generation);
            ready = call_args[0] != NULL;
        }
        _PyMPK_OpenHandoff(0);
    }
    result = ready ? PyObject_Vectorcall(callable, call_args, (size_t)n, NULL)
                   : NULL;
    if (made) {
        for (Py_ssize_t i = first; i < n; i++) {
            Py_DECREF(call_args[i]);
        }
        if (input != NULL && ready) {
            Py_DECREF(call_args[0]);
        }
    }
    result = _PyMPK_SealedResult(result, _PyMPK_SlotBase(self->handle.slot),
                                 _PyMPK_SLOT_SIZE, DomainError);
    status = _PyMPK_ExitSealed(self->handle);
    if (made && call_args != small) {
        PyMem_Free(call_args);
    }
    if (status != _PyMPK_OK) {
        /* Cannot happen while the seal holds; fail closed, still inside. */
        Py_XDECREF(result);
        PyErr_Clear();
        return raise_status(status, "exit", self);
    }
    if (input != NULL) {
        /* Outside now, holding the hand-off key: what the callable handed
         * off (hand_off()) is returned beside its result. */
        PyObject *handed = _PyMPK_TakeHandedOff();
        if (result != NULL) {
            Py_SETREF(result, PyTuple_Pack(2, result, handed ? handed : Py_None));
        }
        Py_XDECREF(handed);
    }
    return result;
}

static PyObject *
Domain_run_sealed(DomainObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "run_sealed() needs a callable");
        return NULL;
    }
    return run_sealed(self, args[0], args + 1, nargs - 1, NULL);
}

static PyObject *
Domain_run_sealed_on(DomainObject *self, PyObject *const *args,
                     Py_ssize_t nargs)
{
    if (nargs < 2) {
        PyErr_SetString(PyExc_TypeError,
                        "run_sealed_on() needs an input and a callable");
        return NULL;
    }
    return run_sealed(self, args[1], args + 2, nargs - 2, args[0]);
}

/* METH_FASTCALL: an argument tuple would be allocated inside the domain's
 * private heap and released by this thread after the exit gate. */
static PyObject *
Domain_context_exit(DomainObject *self, PyObject *const *args,
                    Py_ssize_t nargs)
{
    /* __exit__(exc_type, exc, tb): leave the domain, never swallow. */
    if (Domain_exit(self, NULL) == NULL) {
        return NULL;
    }
    Py_RETURN_FALSE;
}

static PyObject *
Domain_destroy(DomainObject *self, PyObject *Py_UNUSED(ignored))
{
    _PyMPK_Status status;

    Py_BEGIN_ALLOW_THREADS
    status = _PyMPK_Destroy(self->handle);
    Py_END_ALLOW_THREADS
    if (status != _PyMPK_OK) {
        return raise_status(status, "destroy", self);
    }
    self->alive = 0;
    if (slot_objects[self->handle.slot] == self) {
        slot_objects[self->handle.slot] = NULL;
    }
    if (self->registered) {
        self->registered = 0;
        Py_DECREF(self);    /* the table's reference; the caller holds another */
    }
    Py_RETURN_NONE;
}

static PyObject *
Domain_alloc(DomainObject *self, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"size", "align", NULL};
    Py_ssize_t size;
    Py_ssize_t align = 16;
    void *address = NULL;
    _PyMPK_Status status;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "n|n:alloc", kwlist,
                                     &size, &align))
    {
        return NULL;
    }
    if (is_sealed()) {
        return refuse_sealed("allocate in a domain");
    }
    if (size <= 0 || align <= 0) {
        PyErr_Format(PyExc_ValueError, "alloc needs a positive size and "
                     "alignment, not size=%zd, align=%zd", size, align);
        return NULL;
    }
    status = _PyMPK_Alloc(self->handle, (size_t)size, (size_t)align,
                          &address);
    if (status != _PyMPK_OK) {
        return raise_status(status, "allocate", self);
    }
    return PyLong_FromVoidPtr(address);
}

static PyObject *
Domain_repr(DomainObject *self)
{
    _PyMPK_DomainInfo info;
    if (!domain_info(self, &info)) {
        return PyUnicode_FromFormat("<_faastlane.Domain slot=%d destroyed>",
                                    self->handle.slot);
    }
    return PyUnicode_FromFormat("<_faastlane.Domain slot=%d key=%d "
                                "committed=%zu entered=%d>",
                                self->handle.slot, info.key,
                                info.committed, info.entered);
}

/* Properties that read the live table; a destroyed domain keeps its slot
 * and answers the rest with None or 0. */

static PyObject *
Domain_get_slot(DomainObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromLong(self->handle.slot);
}

static PyObject *
Domain_get_alive(DomainObject *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(self->alive);
}

static PyObject *
Domain_get_key(DomainObject *self, void *Py_UNUSED(closure))
{
    _PyMPK_DomainInfo info;
    if (!domain_info(self, &info) || info.key < 0) {
        Py_RETURN_NONE;
    }
    return PyLong_FromLong(info.key);
}

static PyObject *
Domain_get_pkru(DomainObject *self, void *Py_UNUSED(closure))
{
    _PyMPK_DomainInfo info;
    if (!domain_info(self, &info) || info.key < 0) {
        Py_RETURN_NONE;
    }
    return PyLong_FromUnsignedLong(info.pkru);
}

static PyObject *
Domain_get_base(DomainObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSize_t((size_t)_PyMPK_SlotBase(self->handle.slot));
}

static PyObject *
Domain_get_size(DomainObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSize_t(_PyMPK_SLOT_SIZE);
}

static PyObject *
Domain_get_committed(DomainObject *self, void *Py_UNUSED(closure))
{
    _PyMPK_DomainInfo info;
    return PyLong_FromSize_t(domain_info(self, &info) ? info.committed : 0);
}

static PyObject *
Domain_get_used(DomainObject *self, void *Py_UNUSED(closure))
{
    _PyMPK_DomainInfo info;
    return PyLong_FromSize_t(domain_info(self, &info) ? info.used : 0);
}

static PyObject *
Domain_get_entered(DomainObject *self, void *Py_UNUSED(closure))
{
    _PyMPK_DomainInfo info;
    return PyLong_FromLong(domain_info(self, &info) ? info.entered : 0);
}

static PyObject *
Domain_get_enters(DomainObject *self, void *Py_UNUSED(closure))
{
    _PyMPK_DomainInfo info;
    return PyLong_FromUnsignedLongLong(domain_info(self, &info)
                                       ? info.enters : 0);
}

static PyObject *
Domain_get_exits(DomainObject *self, void *Py_UNUSED(closure))
{
    _PyMPK_DomainInfo info;
    return PyLong_FromUnsignedLongLong(domain_info(self, &info)
                                       ? info.exits : 0);
}

static PyObject *
Domain_heap_stats(DomainObject *self, PyObject *Py_UNUSED(ignored))
{
    _PyMPK_HeapStats st;
    if (!self->alive || _PyMPK_HeapGetStats(self->handle.slot, &st) != 0) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("{sn sn sn sn sn sn sn sn}",
                         "arenas", (Py_ssize_t)st.arenas,
                         "arenas_free", (Py_ssize_t)st.arenas_free,
                         "large_blocks", (Py_ssize_t)st.large_blocks,
                         "large_bytes", (Py_ssize_t)st.large_bytes,
                         "malloc_blocks", (Py_ssize_t)st.malloc_blocks,
                         "malloc_bytes", (Py_ssize_t)st.malloc_bytes,
                         "huge_extents_free", (Py_ssize_t)st.huge_extents_free,
                         "huge_extents_lost", (Py_ssize_t)st.huge_extents_lost);
}

static PyObject *
Domain_get_private_heap(DomainObject *self, void *Py_UNUSED(closure))
{
    return PyBool_FromLong(self->alive
                           && _PyMPK_HeapEnabled(self->handle.slot));
}

/* The exit gate's escape check: shared objects still pointing into the slot. */
static PyObject *
Domain_shared_referrers(DomainObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->alive) {
        PyErr_Format(DomainError, "cannot scan domain (slot %d): it was "
                     "destroyed", self->handle.slot);
        return NULL;
    }
    return _PyMPK_SharedReferrers(_PyMPK_SlotBase(self->handle.slot),
                                  _PyMPK_SLOT_SIZE);
}

/* The exit gate inspects shared containers that other domains' objects may
   share: iterating them in Python would touch those objects. */
static PyObject *
Domain_visible_items(DomainObject *self, PyObject *container)
{
    if (!self->alive) {
        PyErr_Format(DomainError, "domain (slot %d) was destroyed", self->handle.slot);
        return NULL;
    }
    return _PyMPK_VisibleItems(container, _PyMPK_SlotBase(self->handle.slot),
                               _PyMPK_SLOT_SIZE);
}

static PyMethodDef Domain_methods[] = {
    {"enter", (PyCFunction)Domain_enter, METH_NOARGS,
     "enter()\n--\n\nEntry gate: from now on this thread reaches shared "
     "memory and this domain's memory only.\nRaises GateError if the thread "
     "is already in a domain or the domain was destroyed."},
    {"exit", (PyCFunction)Domain_exit, METH_NOARGS,
     "exit()\n--\n\nExit gate: back to shared memory only.\nRaises "
     "GateError if this thread is not inside this domain."},
    {"destroy", (PyCFunction)Domain_destroy, METH_NOARGS,
     "destroy()\n--\n\nZero the slot, retag it key 0 and PROT_NONE, free "
     "the key.\nRaises GateError while a thread is inside."},
    {"alloc", (PyCFunction)(void (*)(void))Domain_alloc,
     METH_VARARGS | METH_KEYWORDS,
     "alloc(size, align=16)\n--\n\nAddress of `size` zeroed bytes inside "
     "the domain's slot (bump allocation, released by destroy())."},
    {"run_sealed", (PyCFunction)(void (*)(void))Domain_run_sealed,
     METH_FASTCALL,
     "run_sealed(callable, *args)\n--\n\nEnter the domain, seal this thread, "
     "return callable(*args), unseal and exit: how the runtime runs function "
     "code.  While sealed, enter/exit/destroy, Domain(), alloc(), "
     "restore_thread_pkru(), live_domains(), owner_of() and "
     "install_fault_reporter() raise SealedError, and threads started are "
     "sealed for life.  The result must be shared (a private one raises "
     "DomainError); an exception leaves without traceback or context, and a "
     "private one is replaced by a shared copy of its text."},
    {"run_sealed_on", (PyCFunction)(void (*)(void))Domain_run_sealed_on,
     METH_FASTCALL,
     "run_sealed_on(input, callable, *args)\n--\n\n(run_sealed(callable, "
     "copy, *args), handed): copy is the domain's own deep copy of the plain "
     "JSON value input (containers, and every leaf of a private heap), made "
     "after the entry gate; an input in the hand-off domain's heap is read "
     "there with the hand-off key granted for the copy only.  handed is what "
     "the call handed off last (hand_off()), or None."},
    {"__enter__", (PyCFunction)Domain_enter, METH_NOARGS,
     "Enter the domain for the body of a with statement."},
    {"visible_items", (PyCFunction)Domain_visible_items, METH_O,
     "visible_items(container)\n--\n\nThe entries of a dict (as (key, value) "
     "pairs), list, tuple or set that hold nothing of another domain's slot; "
     "those are skipped by address, never read."},
    {"shared_referrers", (PyCFunction)Domain_shared_referrers, METH_NOARGS,
     "shared_referrers()\n--\n\nThe shared GC-tracked objects that hold a "
     "pointer into this domain's slot (escapes, once its function returned). "
     "Compares addresses only; safe inside the domain or outside."},
    {"heap_stats", (PyCFunction)Domain_heap_stats, METH_NOARGS,
     "heap_stats()\n--\n\nCounters of the domain's private heap (arenas, C malloc and "
     "large blocks, free extents),\nor None when it has none."},
    {"__exit__", (PyCFunction)(void (*)(void))Domain_context_exit,
     METH_FASTCALL,
     "Exit the domain at the end of a with statement."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Domain_getset[] = {
    {"private_heap", (getter)Domain_get_private_heap, NULL,
     "True when Python allocations inside the domain go to its slot", NULL},
    {"slot", (getter)Domain_get_slot, NULL,
     "index of the address slot (stable for the domain's life)", NULL},
    {"alive", (getter)Domain_get_alive, NULL,
     "False once destroyed", NULL},
    {"key", (getter)Domain_get_key, NULL,
     "protection key, or None without keys, while parked or once destroyed", NULL},
    {"pkru", (getter)Domain_get_pkru, NULL,
     "PKRU value the entry gate writes, or None without keys", NULL},
    {"base", (getter)Domain_get_base, NULL,
     "first address of the slot", NULL},
    {"size", (getter)Domain_get_size, NULL,
     "bytes of address space in the slot", NULL},
    {"committed", (getter)Domain_get_committed, NULL,
     "bytes of the slot that are usable (read/write, tagged)", NULL},
    {"used", (getter)Domain_get_used, NULL,
     "bytes handed out by alloc()", NULL},
    {"entered", (getter)Domain_get_entered, NULL,
     "threads inside the domain now", NULL},
    {"enters", (getter)Domain_get_enters, NULL,
     "entry gates crossed into this domain", NULL},
    {"exits", (getter)Domain_get_exits, NULL,
     "exit gates crossed out of this domain", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(Domain_doc,
"Domain(*, private_heap=False)\n--\n\n"
"A protection domain: a protection key and a slot of address space tagged\n"
"with it.  Up to 64 may live (DomainLimitError past that); past 15 the idle\n"
"ones park: their key goes to the domain being entered (mpk_keys.c).\n"
"With private_heap=True every Python allocation of a thread inside the\n"
"domain lands in its slot (PRIVATE_HEAPS.md).\n"
"Use enter()/exit() (or `with domain:`) around code that may touch its\n"
"memory, destroy() when done.");

static PyTypeObject Domain_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "_faastlane.Domain",
    .tp_basicsize = sizeof(DomainObject),
    .tp_dealloc = (destructor)Domain_dealloc,
    .tp_repr = (reprfunc)Domain_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = Domain_doc,
    .tp_methods = Domain_methods,
    .tp_getset = Domain_getset,
    .tp_new = Domain_new,
};

/* ---------------------------------------------------------------------- */
/* Module functions                                                       */

static PyObject *
faastlane_available(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(_PyMPK_KeysAvailable());
}

static PyObject *
faastlane_malloc_routed(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return PyBool_FromLong(_PyMPK_MallocRouted());
}

static PyObject *
faastlane_unavailable_reason(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    const char *reason = _PyMPK_UnavailableReason();
    if (reason == NULL) {
        Py_RETURN_NONE;
    }
    return PyUnicode_FromString(reason);
}

static PyObject *
faastlane_implementation(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return PyUnicode_FromString(_PyMPK_KeysAvailable() ? "keys" : "no-keys");
}

static PyObject *
slot_object(int slot, int check_generation, uint32_t generation)
{
    DomainObject *d;
    if (slot < 0 || slot >= _PyMPK_SLOT_COUNT) {
        Py_RETURN_NONE;
    }
    d = slot_objects[slot];
    if (d == NULL || (check_generation && d->handle.generation != generation)) {
        Py_RETURN_NONE;
    }
    Py_INCREF(d);
    return (PyObject *)d;
}

static PyObject *
faastlane_current_domain(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    _PyMPK_Handle handle;
    if (!_PyMPK_CurrentHandle(&handle)) {
        Py_RETURN_NONE;
    }
    return slot_object(handle.slot, 1, handle.generation);
}

static PyObject *
faastlane_live_domains(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    PyObject *result;
    if (is_sealed()) {
        return refuse_sealed("list the live domains");
    }
    result = PyList_New(0);
    if (result == NULL) {
        return NULL;
    }
    for (int i = 0; i < _PyMPK_SLOT_COUNT; i++) {
        if (slot_objects[i] != NULL
            && PyList_Append(result, (PyObject *)slot_objects[i]) < 0)
        {
            Py_DECREF(result);
            return NULL;
        }
    }
    return result;
}

static int
address_slot(PyObject *address, int *slot)
{
    void *p = PyLong_AsVoidPtr(address);
    if (p == NULL && PyErr_Occurred()) {
        return -1;
    }
    *slot = _PyMPK_SlotOf(p);
    return 0;
}

static PyObject *
faastlane_slot_of(PyObject *module, PyObject *address)
{
    int slot;
    if (address_slot(address, &slot) < 0) {
        return NULL;
    }
    if (slot < 0) {
        Py_RETURN_NONE;
    }
    return PyLong_FromLong(slot);
}

static PyObject *
faastlane_owner_of(PyObject *module, PyObject *address)
{
    int slot;
    if (is_sealed()) {
        return refuse_sealed("look up a domain by address");
    }
    if (address_slot(address, &slot) < 0) {
        return NULL;
    }
    return slot_object(slot, 0, 0);
}

static int
set_counter(PyObject *dict, const char *name, uint64_t value)
{
    PyObject *v = PyLong_FromUnsignedLongLong(value);
    int rc;
    if (v == NULL) {
        return -1;
    }
    rc = PyDict_SetItemString(dict, name, v);
    Py_DECREF(v);
    return rc;
}

static PyObject *
faastlane_counters(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    _PyMPK_Counters c;
    PyObject *d = PyDict_New();

    if (d == NULL) {
        return NULL;
    }
    _PyMPK_GetCounters(&c);
    if (set_counter(d, "created", c.created) < 0
        || set_counter(d, "destroyed", c.destroyed) < 0
        || set_counter(d, "enters", c.enters) < 0
        || set_counter(d, "exits", c.exits) < 0
        || set_counter(d, "misuse", c.misuse) < 0
        || set_counter(d, "keys_allocated", c.keys_allocated) < 0
        || set_counter(d, "keys_freed", c.keys_freed) < 0
        || set_counter(d, "live", c.live) < 0
        || set_counter(d, "peak_live", c.peak_live) < 0
        || set_counter(d, "parked", c.parked) < 0
        || set_counter(d, "parkings", c.parkings) < 0)
    {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}

static PyObject *
faastlane_install_fault_reporter(PyObject *module, PyObject *arg)
{
    int fd;
    if (is_sealed()) {
        return refuse_sealed("install a fault reporter");
    }
    fd = PyObject_AsFileDescriptor(arg);
    if (fd < 0) {
        return NULL;
    }
    if (_PyMPK_InstallFaultReporter(fd) != 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_NONE;
}

static PyObject *
faastlane_restore_thread_pkru(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    uint32_t value;
    if (is_sealed()) {
        return refuse_sealed("restore this thread's PKRU");
    }
    value = _PyMPK_RestoreThreadPKRU();
    if (!_PyMPK_KeysAvailable()) {
        Py_RETURN_NONE;
    }
    return PyLong_FromUnsignedLong(value);
}

static PyObject *
faastlane_sealed(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    int slot = _PyMPK_SealedSlot();
    if (slot < 0) {
        Py_RETURN_NONE;
    }
    return PyLong_FromLong(slot);
}

static PyObject *
faastlane_gate_code(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    size_t size;
    const unsigned char *code = _PyMPK_GateCode(&size);
    return PyBytes_FromStringAndSize((const char *)code, (Py_ssize_t)size);
}

static PyObject *
faastlane_read_pkru(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    /* Registered only when keys are available: RDPKRU is SIGILL otherwise. */
    return PyLong_FromUnsignedLong(_PyMPK_ReadPKRU());
}

/* METH_FASTCALL: no argument tuple is made in the caller's private heap. */
static PyObject *
faastlane_set_handoff(PyObject *module, PyObject *arg)
{
    DomainObject *domain = (DomainObject *)arg;
    _PyMPK_Status status;

    if (!PyObject_TypeCheck(arg, &Domain_Type)) {
        PyErr_Format(PyExc_TypeError, "set_handoff() needs a Domain, not %T", arg);
        return NULL;
    }
    if (!domain->alive || !_PyMPK_HeapEnabled(domain->handle.slot)) {
        PyErr_SetString(DomainError, "the hand-off domain must be alive and "
                        "have a private heap");
        return NULL;
    }
    status = _PyMPK_SetHandoff(domain->handle);
    if (status != _PyMPK_OK) {
        return raise_status(status, "set_handoff", domain);
    }
    Py_RETURN_NONE;
}

static PyObject *
faastlane_hand_off(PyObject *module, PyObject *value)
{
    int handed = _PyMPK_HandOff(value);
    if (handed < 0) {
        return NULL;
    }
    return PyBool_FromLong(handed);
}

static PyObject *
faastlane_deep_copy_json(PyObject *module, PyObject *value)
{
    return _PyMPK_DeepCopyJSON(value);
}

static PyObject *
faastlane_call_shared(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs < 1) {
        PyErr_SetString(PyExc_TypeError, "call_shared() needs a callable");
        return NULL;
    }
    return _PyMPK_CallShared(args[0], args + 1, nargs - 1);
}

static PyObject *
faastlane_freeze(PyObject *module, PyObject *args, PyObject *kwargs)
{
    static char *kwlist[] = {"obj", "label", "code_only", NULL};
    PyObject *op, *label = NULL;
    int code_only = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|Up:freeze", kwlist,
                                     &op, &label, &code_only)) {
        return NULL;
    }
    if (_PyMPK_Freeze(op, label, code_only) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
faastlane_guard_queue_type(PyObject *module, PyObject *type)
{
    if (is_sealed()) {
        return refuse_sealed("guard a queue type");
    }
    if (_PyMPK_GuardQueueType(type) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
faastlane_caches_per_function(PyObject *module, PyObject *args)
{
    PyObject *lru_wrapper_type, *struct_module;
    if (!PyArg_ParseTuple(args, "OO:caches_per_function", &lru_wrapper_type,
                          &struct_module))
    {
        return NULL;
    }
    if (is_sealed()) {
        return refuse_sealed("redirect the standard library's caches");
    }
    if (_PyMPK_CachesPerFunction(lru_wrapper_type, struct_module) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
faastlane_frozen_count(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromSsize_t(_PyMPK_FrozenCount());
}

static PyObject *
faastlane_register_broker(PyObject *module, PyObject *callable)
{
    if (!PyCallable_Check(callable)) {
        PyErr_SetString(PyExc_TypeError, "register_broker() needs a callable");
        return NULL;
    }
    if (_PyMPK_RegisterBroker(callable) < 0) {
        return NULL;
    }
    return Py_NewRef(callable);     /* usable as a decorator */
}

static PyObject *
faastlane_name_slot(PyObject *module, PyObject *args)
{
    int slot;
    PyObject *name;
    if (!PyArg_ParseTuple(args, "iU:name_slot", &slot, &name)) {
        return NULL;
    }
    if (_PyMPK_NameSlot(slot, name) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
faastlane_share_allocations_of(PyObject *module, PyObject *args)
{
    unsigned long long start, end;
    const char *why = NULL;
    if (!PyArg_ParseTuple(args, "KK:share_allocations_of", &start, &end)) {
        return NULL;
    }
    if (_PyMPK_CurrentSlot() >= 0) {
        PyErr_SetString(GateError, "share_allocations_of() is refused inside a "
                        "domain: only the Orchestrator, outside, registers code");
        return NULL;
    }
    if (_PyMPK_ShareCallerRange((uintptr_t)start, (uintptr_t)end, &why) != 0) {
        PyErr_SetString(DomainError, why);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* Size 0: every slot's objects are foreign, so only wholly shared entries. */
static PyObject *
faastlane_shared_items(PyObject *module, PyObject *container)
{
    return _PyMPK_VisibleItems(container, 0, 0);
}

static PyObject *
faastlane_copy_json(PyObject *module, PyObject *value)
{
    return _PyMPK_CopyContainers(value);
}

static PyObject *
faastlane_promote_json(PyObject *module, PyObject *value)
{
    return _PyMPK_PromoteJSON(value);
}

static PyMethodDef read_pkru_def = {
    "read_pkru", faastlane_read_pkru, METH_NOARGS,
    "read_pkru()\n--\n\nThe calling thread's PKRU register (RDPKRU).  "
    "Present only where protection keys are available."};

static PyMethodDef faastlane_methods[] = {
    {"available", faastlane_available, METH_NOARGS,
     "available()\n--\n\nWhether hardware protection keys are in use: the "
     "CPU has PKU, the OS enabled it, and pkey_alloc succeeds."},
    {"unavailable_reason", faastlane_unavailable_reason, METH_NOARGS,
     "unavailable_reason()\n--\n\nWhy keys are not in use, or None."},
    {"malloc_routed", faastlane_malloc_routed, METH_NOARGS,
     "malloc_routed()\n--\n\nTrue once C malloc and friends are routed by domain "
     "(FAASTLANE_MPK_MALLOC=on when the first private heap was made)."},
    {"implementation", faastlane_implementation, METH_NOARGS,
     "implementation()\n--\n\n'keys' or 'no-keys' (same bookkeeping, no "
     "enforcement)."},
    {"current_domain", faastlane_current_domain, METH_NOARGS,
     "current_domain()\n--\n\nThe Domain this thread is inside, or None."},
    {"live_domains", faastlane_live_domains, METH_NOARGS,
     "live_domains()\n--\n\nEvery Domain not yet destroyed."},
    {"slot_of", faastlane_slot_of, METH_O,
     "slot_of(address)\n--\n\nIndex of the slot holding address, or None."},
    {"owner_of", faastlane_owner_of, METH_O,
     "owner_of(address)\n--\n\nThe live Domain whose slot holds address, "
     "or None."},
    {"counters", faastlane_counters, METH_NOARGS,
     "counters()\n--\n\nProcess-wide counts: created, destroyed, enters, "
     "exits, misuse, keys_allocated, keys_freed, live, peak_live, parked, parkings."},
    {"install_fault_reporter", faastlane_install_fault_reporter, METH_O,
     "install_fault_reporter(fd)\n--\n\nOn SIGSEGV/SIGBUS write one "
     "'faastlane-fault:' line (signo, code, addr, pkey, owner and thread "
     "domains, PKRU at handler entry and after restore) to fd, then chain "
     "to the previous handler or die of the signal."},
    {"restore_thread_pkru", faastlane_restore_thread_pkru, METH_NOARGS,
     "restore_thread_pkru()\n--\n\nRewrite this thread's PKRU from its domain "
     "state (the shared value outside domains) through the checked gate; "
     "returns the value, or None without keys.  A thread started inside a "
     "domain inherits its creator's PKRU: calling this first drops it."},
    {"share_allocations_of", faastlane_share_allocations_of, METH_VARARGS,
     "share_allocations_of(start, end)\n--\n\nCode at addresses [start, end) "
     "allocates in the shared heap (C malloc and PyMem_*),\neven on a thread inside "
     "a domain: for extensions' process-wide caches.\nRefused inside a domain."},
    {"shared_items", faastlane_shared_items, METH_O,
     "shared_items(container)\n--\n\nThe entries of a dict (as (key, value) pairs), "
     "list, tuple or set that hold\nnothing of any domain's slot; the others are "
     "skipped by address, never read."},
    {"copy_json", faastlane_copy_json, METH_O,
     "copy_json(value)\n--\n\nA copy of a JSON value's dicts and lists, made by this "
     "thread's allocator (inside a domain: its private heap), sharing the\nimmutable "
     "str/int/float/bool/None leaves.  TypeError for anything else."},
    {"promote_json", faastlane_promote_json, METH_O,
     "promote_json(value)\n--\n\nA deep copy of a plain JSON value (exact dict "
     "with str keys, list, tuple as a list, str, int, float, bool, None) made "
     "by this thread's allocator: containers always, leaves only when they "
     "live in a private heap.  TypeError for anything else."},
    {"set_handoff", (PyCFunction)faastlane_set_handoff, METH_O,
     "set_handoff(domain)\n--\n\nMake `domain` (alive, with a private heap) "
     "the hand-off domain, once per process: from then on a thread outside "
     "every domain holds its key as well as key 0, function code never does; "
     "it never parks and cannot be destroyed.  Call it before starting other "
     "threads."},
    {"hand_off", (PyCFunction)faastlane_hand_off, METH_O,
     "hand_off(value)\n--\n\nIn a call of Domain.run_sealed_on: rebuild the "
     "plain JSON value in the hand-off domain's heap (private leaves copied, "
     "shared ones kept; the hand-off key granted for the copy only) for the "
     "gate to return beside the call's result.  False, and nothing kept, "
     "without a hand-off domain, outside a sealed call, or for a value that is "
     "not plain JSON."},
    {"deep_copy_json", (PyCFunction)faastlane_deep_copy_json, METH_O,
     "deep_copy_json(value)\n--\n\nA deep copy of a plain JSON value (dict with "
     "str keys, list, tuple as list, str, int, float, bool, None) in which "
     "every container and every leaf but the immortal ones is new, made by "
     "the calling thread's allocator."},
    {"call_shared", (PyCFunction)(void (*)(void))faastlane_call_shared,
     METH_FASTCALL,
     "call_shared(callable, *args)\n--\n\nCall callable(*args) with this "
     "thread allocating in the shared heap, while it stays inside its domain "
     "(and can read the domain's objects): how a result is promoted.  Sealed "
     "code may call only callables registered with register_broker(), and any "
     "private function or generator that starts running inside one ends the "
     "shared allocation (SharedWriteError for an unregistered callable)."},
    {"freeze", (PyCFunction)(void (*)(void))faastlane_freeze,
     METH_VARARGS | METH_KEYWORDS,
     "freeze(obj, label=None, code_only=False)\n--\n\nMake a shared object "
     "read-only to sealed function code: its items (dict, list, set) and "
     "attributes; with code_only, for a module's namespace dict or a class, "
     "only the stores that bind or unbind a callable, and for a list or set, "
     "every store by function code but none by libraries as they load (the "
     "library loader).  label names it in SharedWriteError.  "
     "Refused to sealed code; kept alive for good."},
    {"guard_queue_type", faastlane_guard_queue_type, METH_O,
     "guard_queue_type(type)\n--\n\nFrom now on, get and put (and their "
     "_nowait forms) of queue.SimpleQueue objects refuse function code with "
     "SharedWriteError unless the queue is its own (made in its private heap): "
     "the runtime's queues carry other functions' data in flight."},
    {"caches_per_function", faastlane_caches_per_function, METH_VARARGS,
     "caches_per_function(lru_wrapper_type, struct_module)\n--\n\nFrom now on, "
     "function code (a thread allocating in a private heap) calling an "
     "lru_cache wrapper or a function of _struct uses its own copy of the "
     "cache, made in its heap on first use: concurrent functions never see "
     "each other's entries.  Refused to sealed code."},
    {"frozen_count", faastlane_frozen_count, METH_NOARGS,
     "frozen_count()\n--\n\nHow many objects are frozen."},
    {"register_broker", faastlane_register_broker, METH_O,
     "register_broker(callable)\n--\n\nLet sealed code pass callable to "
     "call_shared (a runtime operation: it runs unguarded, allocating shared, "
     "until private code starts running in it).  Refused to sealed code.  "
     "Returns callable."},
    {"name_slot", faastlane_name_slot, METH_VARARGS,
     "name_slot(slot, name)\n--\n\nThe function name SharedWriteError gives "
     "for sealed code of slot.  Refused to sealed code."},
    {"sealed", faastlane_sealed, METH_NOARGS,
     "sealed()\n--\n\nThe slot of the domain whose function code this thread "
     "runs sealed (Domain.run_sealed, or a thread started from it), or None."},
    {"gate_code", faastlane_gate_code, METH_NOARGS,
     "gate_code()\n--\n\nThe machine code of the checked WRPKRU gate."},
    {NULL, NULL, 0, NULL},
};

PyDoc_STRVAR(faastlane_doc,
"Faastlane protection domains: memory-protection keys, address slots and\n"
"checked PKRU gates (see cpython-mpk/MODULE.md).  Without hardware keys the\n"
"same API runs its bookkeeping and available() is False.");

static struct PyModuleDef faastlane_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_faastlane",
    .m_doc = faastlane_doc,
    .m_size = -1,
    .m_methods = faastlane_methods,
};

static int
add_exception(PyObject *module, PyObject **slot, const char *name,
              PyObject *base, const char *doc)
{
    *slot = PyErr_NewExceptionWithDoc(name, doc, base, NULL);
    if (*slot == NULL) {
        return -1;
    }
    Py_INCREF(*slot);
    if (PyModule_AddObject(module, strrchr(name, '.') + 1, *slot) < 0) {
        Py_DECREF(*slot);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC
PyInit__faastlane(void)
{
    PyObject *module;

    _PyMPK_Init();
    if (PyType_Ready(&Domain_Type) < 0
        || PyType_Ready(&_PyMPK_PerFunctionDictType) < 0)
    {
        return NULL;
    }
    module = PyModule_Create(&faastlane_module);
    if (module == NULL) {
        return NULL;
    }
    if (add_exception(module, &DomainError, "_faastlane.DomainError",
                      PyExc_RuntimeError,
                      "A protection-domain operation was refused.") < 0
        || add_exception(module, &GateError, "_faastlane.GateError",
                         DomainError,
                         "Gate misuse: nested enter, exit of a domain not "
                         "entered, entering or destroying a domain in the "
                         "wrong state.") < 0
        || add_exception(module, &DomainLimitError,
                         "_faastlane.DomainLimitError", DomainError,
                         "No protection key or slot is left for another "
                         "live domain.") < 0
        || add_exception(module, &SealedError, "_faastlane.SealedError",
                         GateError,
                         "The calling thread runs sealed function code: the "
                         "domain API is refused to it.") < 0
        || add_exception(module, &_PyMPK_SharedWriteError,
                         "_faastlane.SharedWriteError", SealedError,
                         "Sealed function code tried to change shared code or "
                         "the runtime's state, or to allocate shared through "
                         "an operation the runtime did not register.") < 0)
    {
        goto error;
    }
    Py_INCREF(&Domain_Type);
    if (PyModule_AddObject(module, "Domain", (PyObject *)&Domain_Type) < 0) {
        Py_DECREF(&Domain_Type);
        goto error;
    }
    if (PyModule_AddType(module, &_PyMPK_PerFunctionDictType) < 0) {
        goto error;
    }
    if (PyModule_AddIntConstant(module, "SLOT_COUNT", _PyMPK_SLOT_COUNT) < 0
        || PyModule_AddIntConstant(module, "MAX_LIVE_DOMAINS",
                                   _PyMPK_MAX_LIVE) < 0
        || PyModule_AddObject(module, "SLOT_SIZE",
                              PyLong_FromSize_t(_PyMPK_SLOT_SIZE)) < 0)
    {
        goto error;
    }
    if (_PyMPK_KeysAvailable()) {
        PyObject *f = PyCFunction_NewEx(&read_pkru_def, NULL, NULL);
        if (f == NULL || PyModule_AddObject(module, "read_pkru", f) < 0) {
            Py_XDECREF(f);
            goto error;
        }
    }
    return module;

error:
    Py_DECREF(module);
    return NULL;
}
