/* The event log's queue of rows, and a frame's row: the part of the log that runs once per frame
 * on the chain's thread (see events.EventLog and docs/adr/0010-event-log.md).
 *
 * A frame's row is 17 plain values read off the frame, its draft and its reply; the writer
 * process makes the event of it. Read in C, the row costs the chain a few hundred instructions
 * where the same reads in bytecode cost several thousand. What is rare stays in Python: a
 * session's first id and a refused frame's outcome come from the callables the queue is given.
 *
 * Every function here runs holding the interpreter lock and calls no Python code between
 * reading and changing the queue, so `take` and `put` are atomic towards each other.
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

#ifdef Py_GIL_DISABLED
#error "the queue's put and take are atomic only under the interpreter lock: a free-threaded build needs a lock here"
#endif

/* A draft: what the stages learn of one frame (events.Draft), a list of DRAFT_SIZE values. */
enum { SEEN, REJECTION, ACTION, BEGAN, DRAFT_SIZE };

/* A frame's row, in this order (events.FRAME_ROW is this list, read from the module). */
static const char *const FRAME_ROW[] = {
    "when", "session_id", "request_id", "transport", "direction", "kind", "route", "method", "tool_id",
    "status", "seconds", "bytes_in", "bytes_out", "protocol_version", "error", "meta", "action",
};
#define ROW_SIZE ((Py_ssize_t)(sizeof(FRAME_ROW) / sizeof(FRAME_ROW[0])))

/* Where types.Frame and types.Message keep their fields (both are named tuples). */
enum { FRAME_RAW, FRAME_TRANSPORT, FRAME_SESSION, FRAME_SIZE, FRAME_DIRECTION, FRAME_MESSAGE = 7, FRAME_VERSION,
       FRAME_ANNOTATIONS, FRAME_DRAFT, FRAME_FIELDS };
enum { MESSAGE_KIND, MESSAGE_ID, MESSAGE_METHOD, MESSAGE_PARAMS, MESSAGE_FIELDS };

static PyObject *s_value, *s_log_id, *s_protocol_version, *s_to_bytes, *s_document, *s_to_peer, *s_get;
static PyObject *s_meta, *s_name, *s_id, *s_result, *s_is_error, *s_tool, *s_tools_call, *s_ok, *s_tool_error;
static PyObject *s_relay;

static double perf_counter(void) {
#if PY_VERSION_HEX >= 0x030D0000
    PyTime_t now;
    PyTime_PerfCounterRaw(&now);
    return PyTime_AsSecondsDouble(now);
#else
    return _PyTime_AsSecondsDouble(_PyTime_GetPerfCounter());
#endif
}

/* The plain value of an enum member (a frame's kind and direction are StrEnum members): a
 * handful of members, each looked up once, so the per-frame reads are a pointer compare. */
#define MEMBERS 16
static PyObject *members[MEMBERS], *member_values[MEMBERS];

static PyObject *value_of(PyObject *member) {
    int i = 0;
    for (; i < MEMBERS && members[i] != NULL; i++) {
        if (members[i] == member) return Py_NewRef(member_values[i]);
    }
    PyObject *value = PyObject_GetAttr(member, s_value);
    if (value != NULL && i < MEMBERS) {
        members[i] = Py_NewRef(member);
        member_values[i] = Py_NewRef(value);
    }
    return value;
}

typedef struct {
    PyObject_HEAD
    PyObject *rows;       /* list of rows, oldest first */
    Py_ssize_t batch;     /* `full` is called while at least this many rows wait */
    PyObject *full;       /* () -> None: the caller sends a batch, or waits for the writer */
    PyObject *session_id; /* (session) -> str: a session's id in the log, on its first event */
    PyObject *refused;    /* (session, draft, rejection, reply, request_id, method, tool) -> (status, route, error) */
    PyObject *count;      /* (row) -> None, or None: what else counts every row (the metrics) */
} RowQueue;

static int shape_error(const char *what) {
    PyErr_Format(PyExc_TypeError, "event row: %s", what);
    return -1;
}

static int put(RowQueue *self, PyObject *row) {
    if (self->count != Py_None) {
        PyObject *counted = PyObject_CallOneArg(self->count, row);
        if (counted == NULL) return -1;
        Py_DECREF(counted);
    }
    if (PyList_Append(self->rows, row) < 0) return -1;
    if (PyList_GET_SIZE(self->rows) >= self->batch) {
        PyObject *sent = PyObject_CallNoArgs(self->full);
        if (sent == NULL) return -1;
        Py_DECREF(sent);
    }
    return 0;
}

/* The tool a frame names: a `tools/call`'s `name`, or for a response the tool its request called. */
static PyObject *tool_of(PyObject *method, PyObject *params, PyObject *annotations) {
    if (PyDict_CheckExact(params)) {
        if (!PyUnicode_Check(method) || PyUnicode_Compare(method, s_tools_call) != 0) Py_RETURN_NONE;
        PyObject *name = PyDict_GetItemWithError(params, s_name);
        if (name == NULL) return PyErr_Occurred() ? NULL : Py_NewRef(Py_None);
        return Py_NewRef(name);
    }
    int noted = PyObject_IsTrue(annotations);
    if (noted < 0) return NULL;
    if (!noted) Py_RETURN_NONE;
    return PyObject_CallMethodObjArgs(annotations, s_get, s_tool, NULL);
}

static int is_frame(PyObject *frame) { return PyTuple_Check(frame) && PyTuple_GET_SIZE(frame) == FRAME_FIELDS; }

static int is_draft(PyObject *draft) { return PyList_CheckExact(draft) && PyList_GET_SIZE(draft) == DRAFT_SIZE; }

/* The row of one frame (see events.EventLog.frame for what each value means), or NULL. */
static PyObject *frame_row(RowQueue *self, PyObject *frame, PyObject *reply, double end) {
    if (!is_frame(frame)) return shape_error("not a Frame"), NULL;
    PyObject *draft = PyTuple_GET_ITEM(frame, FRAME_DRAFT);
    if (!is_draft(draft)) return shape_error("the frame has no draft (EventLog.begin gives it one)"), NULL;
    PyObject *session = PyTuple_GET_ITEM(frame, FRAME_SESSION), *size = PyTuple_GET_ITEM(frame, FRAME_SIZE);
    PyObject *seen = PyList_GET_ITEM(draft, SEEN);
    if (seen == Py_None) {
        seen = frame;
    } else if (!is_frame(seen)) {
        return shape_error("the draft's frame is not a Frame"), NULL;
    }
    PyObject *message = PyTuple_GET_ITEM(seen, FRAME_MESSAGE), *version = PyTuple_GET_ITEM(seen, FRAME_VERSION);
    double began = PyFloat_AsDouble(PyList_GET_ITEM(draft, BEGAN));
    if (began == -1.0 && PyErr_Occurred()) return NULL;

    /* Owned from here: every one of these is released at `done`. */
    PyObject *kind = Py_NewRef(Py_None), *request_id = Py_NewRef(Py_None), *tool = Py_NewRef(Py_None);
    PyObject *method = Py_None, *meta = Py_None, *status = s_ok, *route = NULL, *error = Py_None;
    PyObject *refusal = NULL, *row = NULL;
    enum { OWNED_WHEN, OWNED_SESSION, OWNED_DIRECTION, OWNED_SECONDS, OWNED_IN, OWNED_OUT, OWNED_VERSION, OWNED };
    PyObject *owned[OWNED] = {NULL};

    if (message != Py_None) {
        if (!PyTuple_Check(message) || PyTuple_GET_SIZE(message) != MESSAGE_FIELDS) {
            shape_error("not a Message");
            goto done;
        }
        Py_SETREF(kind, value_of(PyTuple_GET_ITEM(message, MESSAGE_KIND)));
        if (kind == NULL) goto done;
        Py_SETREF(request_id, Py_NewRef(PyTuple_GET_ITEM(message, MESSAGE_ID)));
        method = PyTuple_GET_ITEM(message, MESSAGE_METHOD);
        PyObject *params = PyTuple_GET_ITEM(message, MESSAGE_PARAMS);
        if (PyDict_CheckExact(params)) {
            meta = PyDict_GetItemWithError(params, s_meta); /* read by the writer: the sender's trace and step */
            if (meta == NULL) {
                if (PyErr_Occurred()) goto done;
                meta = Py_None;
            } else if (!PyDict_CheckExact(meta)) {
                meta = Py_None;
            }
        }
        Py_SETREF(tool, tool_of(method, params, PyTuple_GET_ITEM(seen, FRAME_ANNOTATIONS)));
        if (tool == NULL) goto done;
    }
    Py_ssize_t bytes_out = 0;
    if (reply != Py_None) {
        PyObject *encoded = PyObject_CallMethodNoArgs(reply, s_to_bytes);
        if (encoded == NULL) goto done;
        bytes_out = PyObject_Size(encoded);
        Py_DECREF(encoded);
        if (bytes_out < 0) goto done;
        PyObject *document = PyObject_GetAttr(reply, s_document);
        if (document == NULL) goto done;
        if (PyDict_CheckExact(document)) {
            PyObject *found = request_id == Py_None ? PyDict_GetItemWithError(document, s_id) : NULL;
            if (found != NULL) Py_SETREF(request_id, Py_NewRef(found));
            PyObject *result = PyErr_Occurred() ? NULL : PyDict_GetItemWithError(document, s_result);
            if (result != NULL && PyDict_CheckExact(result) && PyDict_GetItemWithError(result, s_is_error) == Py_True)
                status = s_tool_error;
        }
        Py_DECREF(document);
        if (PyErr_Occurred()) goto done;
    }
    PyObject *rejection = PyList_GET_ITEM(draft, REJECTION);
    if (rejection == Py_None) {
        route = method;
        if (reply != Py_None) {
            PyObject *to_peer = PyObject_GetAttr(reply, s_to_peer);
            if (to_peer == NULL) goto done;
            int relayed = PyObject_IsTrue(to_peer);
            Py_DECREF(to_peer);
            if (relayed < 0) goto done;
            if (relayed) route = s_relay;
        }
    } else {
        PyObject *args[] = {session, draft, rejection, reply, request_id, method, tool};
        refusal = PyObject_Vectorcall(self->refused, args, 7, NULL);
        if (refusal == NULL) goto done;
        if (!PyTuple_CheckExact(refusal) || PyTuple_GET_SIZE(refusal) != 3) {
            shape_error("refused() returns (status, route, error)");
            goto done;
        }
        status = PyTuple_GET_ITEM(refusal, 0);
        route = PyTuple_GET_ITEM(refusal, 1);
        error = PyTuple_GET_ITEM(refusal, 2);
    }

    if ((owned[OWNED_SESSION] = PyObject_GetAttr(session, s_log_id)) == NULL) goto done;
    if (owned[OWNED_SESSION] == Py_None) {
        Py_SETREF(owned[OWNED_SESSION], PyObject_CallOneArg(self->session_id, session));
        if (owned[OWNED_SESSION] == NULL) goto done;
    }
    if ((owned[OWNED_WHEN] = PyFloat_FromDouble(end)) == NULL) goto done;
    if ((owned[OWNED_SECONDS] = PyFloat_FromDouble(end - began)) == NULL) goto done;
    owned[OWNED_DIRECTION] = value_of(PyTuple_GET_ITEM(frame, FRAME_DIRECTION));
    if (owned[OWNED_DIRECTION] == NULL) goto done;
    if (size != Py_None) {
        owned[OWNED_IN] = Py_NewRef(size);
    } else {
        Py_ssize_t bytes_in = PyObject_Size(PyTuple_GET_ITEM(frame, FRAME_RAW));
        if (bytes_in < 0 || (owned[OWNED_IN] = PyLong_FromSsize_t(bytes_in)) == NULL) goto done;
    }
    if ((owned[OWNED_OUT] = PyLong_FromSsize_t(bytes_out)) == NULL) goto done;
    int stated = PyObject_IsTrue(version); /* the frame's own version, else the session's */
    if (stated < 0) goto done;
    owned[OWNED_VERSION] = stated ? Py_NewRef(version) : PyObject_GetAttr(session, s_protocol_version);
    if (owned[OWNED_VERSION] == NULL) goto done;
    PyObject *const in_order[ROW_SIZE] = {
        owned[OWNED_WHEN], owned[OWNED_SESSION], request_id, PyTuple_GET_ITEM(frame, FRAME_TRANSPORT),
        owned[OWNED_DIRECTION], kind, route, method, PyUnicode_CheckExact(tool) ? tool : Py_None, status,
        owned[OWNED_SECONDS], owned[OWNED_IN], owned[OWNED_OUT], owned[OWNED_VERSION], error, meta,
        PyList_GET_ITEM(draft, ACTION),
    };
    row = PyTuple_New(ROW_SIZE);
    if (row == NULL) goto done;
    int plain = 1; /* no value that the collector tracks: it need not walk the row while it waits */
    for (Py_ssize_t i = 0; i < ROW_SIZE; i++) {
        plain &= !PyObject_IS_GC(in_order[i]);
        PyTuple_SET_ITEM(row, i, Py_NewRef(in_order[i]));
    }
    if (plain) PyObject_GC_UnTrack(row);
done:
    Py_XDECREF(kind);
    Py_XDECREF(request_id);
    Py_XDECREF(tool);
    Py_XDECREF(refusal);
    for (int i = 0; i < OWNED; i++) Py_XDECREF(owned[i]);
    return row;
}

static PyObject *RowQueue_frame(RowQueue *self, PyObject *const *args, Py_ssize_t nargs) {
    double end = perf_counter();
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "frame(frame, reply) takes 2 arguments");
        return NULL;
    }
    PyObject *row = frame_row(self, args[0], args[1], end);
    if (row == NULL) return NULL;
    /* The draft is read: what it holds of the frame (which holds the draft) goes now, not with the collector. */
    PyObject *draft = PyTuple_GET_ITEM(args[0], FRAME_DRAFT);
    if (is_draft(draft)) {
        PyList_SetItem(draft, SEEN, Py_NewRef(Py_None));
        PyList_SetItem(draft, REJECTION, Py_NewRef(Py_None));
    }
    int failed = put(self, row);
    Py_DECREF(row);
    if (failed) return NULL;
    Py_RETURN_NONE;
}

static PyObject *RowQueue_put(RowQueue *self, PyObject *row) {
    if (!PyTuple_CheckExact(row)) {
        PyErr_SetString(PyExc_TypeError, "put(row): a row is a tuple");
        return NULL;
    }
    if (put(self, row) < 0) return NULL;
    Py_RETURN_NONE;
}

static PyObject *RowQueue_begin(RowQueue *self, PyObject *frame) {
    if (!is_frame(frame)) {
        shape_error("begin(frame): not a Frame");
        return NULL;
    }
    PyObject *began = PyFloat_FromDouble(perf_counter());
    if (began == NULL) return NULL;
    PyObject *draft = PyList_New(DRAFT_SIZE);
    if (draft == NULL) {
        Py_DECREF(began);
        return NULL;
    }
    PyList_SET_ITEM(draft, SEEN, Py_NewRef(Py_None));
    PyList_SET_ITEM(draft, REJECTION, Py_NewRef(Py_None));
    PyList_SET_ITEM(draft, ACTION, Py_NewRef(Py_None));
    PyList_SET_ITEM(draft, BEGAN, began);
    PyTypeObject *type = Py_TYPE(frame); /* the same named tuple, its last field the new draft */
    PyObject *opened = type->tp_alloc(type, FRAME_FIELDS);
    if (opened == NULL) {
        Py_DECREF(draft);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < FRAME_DRAFT; i++) PyTuple_SET_ITEM(opened, i, Py_NewRef(PyTuple_GET_ITEM(frame, i)));
    PyTuple_SET_ITEM(opened, FRAME_DRAFT, draft);
    return opened;
}

static PyObject *RowQueue_take(RowQueue *self, PyObject *arg) {
    Py_ssize_t most = PyLong_AsSsize_t(arg);
    if (most == -1 && PyErr_Occurred()) return NULL;
    if (most < 1) {
        PyErr_SetString(PyExc_ValueError, "take(most): most is at least 1");
        return NULL;
    }
    Py_ssize_t queued = PyList_GET_SIZE(self->rows);
    if (queued <= most) { /* all of them: the queue starts a new list */
        PyObject *fresh = PyList_New(0);
        if (fresh == NULL) return NULL;
        PyObject *taken = self->rows;
        self->rows = fresh;
        return taken;
    }
    PyObject *taken = PyList_GetSlice(self->rows, 0, most);
    if (taken == NULL) return NULL;
    if (PyList_SetSlice(self->rows, 0, most, NULL) < 0) {
        Py_DECREF(taken);
        return NULL;
    }
    return taken;
}

static Py_ssize_t RowQueue_len(RowQueue *self) { return PyList_GET_SIZE(self->rows); }

static PyObject *RowQueue_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"batch", "full", "session_id", "refused", NULL};
    Py_ssize_t batch;
    PyObject *full, *session_id, *refused;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "$nOOO:RowQueue", names, &batch, &full, &session_id, &refused))
        return NULL;
    if (batch < 1) {
        PyErr_SetString(PyExc_ValueError, "RowQueue: batch is at least 1");
        return NULL;
    }
    if (!PyCallable_Check(full) || !PyCallable_Check(session_id) || !PyCallable_Check(refused)) {
        PyErr_SetString(PyExc_TypeError, "RowQueue: full, session_id and refused are callables");
        return NULL;
    }
    RowQueue *self = (RowQueue *)type->tp_alloc(type, 0);
    if (self == NULL) return NULL;
    self->rows = PyList_New(0);
    if (self->rows == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->batch = batch;
    self->full = Py_NewRef(full);
    self->session_id = Py_NewRef(session_id);
    self->refused = Py_NewRef(refused);
    self->count = Py_NewRef(Py_None);
    return (PyObject *)self;
}

static int RowQueue_traverse(RowQueue *self, visitproc visit, void *arg) {
    Py_VISIT(self->rows);
    Py_VISIT(self->full);
    Py_VISIT(self->session_id);
    Py_VISIT(self->refused);
    Py_VISIT(self->count);
    return 0;
}

static int RowQueue_clear(RowQueue *self) {
    Py_CLEAR(self->rows);
    Py_CLEAR(self->full);
    Py_CLEAR(self->session_id);
    Py_CLEAR(self->refused);
    Py_CLEAR(self->count);
    return 0;
}

static void RowQueue_dealloc(RowQueue *self) {
    PyObject_GC_UnTrack(self);
    RowQueue_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *RowQueue_get_count(RowQueue *self, void *Py_UNUSED(closure)) { return Py_NewRef(self->count); }

static int RowQueue_set_count(RowQueue *self, PyObject *value, void *Py_UNUSED(closure)) {
    if (value == NULL || (value != Py_None && !PyCallable_Check(value))) {
        PyErr_SetString(PyExc_TypeError, "RowQueue.count is a callable or None");
        return -1;
    }
    Py_SETREF(self->count, Py_NewRef(value));
    return 0;
}

static PyMethodDef RowQueue_methods[] = {
    {"begin", (PyCFunction)RowQueue_begin, METH_O, "begin(frame): the frame with a new draft, its start read now."},
    {"frame", (PyCFunction)(void (*)(void))RowQueue_frame, METH_FASTCALL,
     "frame(frame, reply): queue the row of a frame `begin` gave; it took from its draft's start until now."},
    {"put", (PyCFunction)RowQueue_put, METH_O, "put(row): queue a row as it is."},
    {"take", (PyCFunction)RowQueue_take, METH_O, "take(most): the oldest rows, at most `most`, off the queue."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef RowQueue_getset[] = {
    {"count", (getter)RowQueue_get_count, (setter)RowQueue_set_count, "Called with every row queued, or None.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods RowQueue_as_sequence = {.sq_length = (lenfunc)RowQueue_len};

static PyTypeObject RowQueueType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mcp_server._rows.RowQueue",
    .tp_doc = "The event log's rows, oldest first, and the way a frame's row is made.",
    .tp_basicsize = sizeof(RowQueue),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = RowQueue_new,
    .tp_traverse = (traverseproc)RowQueue_traverse,
    .tp_clear = (inquiry)RowQueue_clear,
    .tp_dealloc = (destructor)RowQueue_dealloc,
    .tp_methods = RowQueue_methods,
    .tp_getset = RowQueue_getset,
    .tp_as_sequence = &RowQueue_as_sequence,
};

static struct PyModuleDef rows_module = {
    PyModuleDef_HEAD_INIT, "mcp_server._rows", "The event log's per-frame path (see events.EventLog).", -1, NULL,
};

static int intern(PyObject **name, const char *text) {
    *name = PyUnicode_InternFromString(text);
    return *name == NULL ? -1 : 0;
}

PyMODINIT_FUNC PyInit__rows(void) {
    if (intern(&s_value, "_value_") || intern(&s_log_id, "log_id") || intern(&s_protocol_version, "protocol_version")
        || intern(&s_to_bytes, "to_bytes") || intern(&s_document, "document") || intern(&s_to_peer, "to_peer")
        || intern(&s_get, "get") || intern(&s_meta, "_meta") || intern(&s_name, "name") || intern(&s_id, "id")
        || intern(&s_result, "result") || intern(&s_is_error, "isError") || intern(&s_tool, "tool")
        || intern(&s_tools_call, "tools/call") || intern(&s_ok, "ok") || intern(&s_tool_error, "tool_error")
        || intern(&s_relay, "relay"))
        return NULL;
    if (PyType_Ready(&RowQueueType) < 0) return NULL;
    PyObject *module = PyModule_Create(&rows_module);
    if (module == NULL) return NULL;
    PyObject *names = PyTuple_New(ROW_SIZE);
    if (names == NULL) goto fail;
    for (Py_ssize_t i = 0; i < ROW_SIZE; i++) {
        PyObject *name = PyUnicode_InternFromString(FRAME_ROW[i]);
        if (name == NULL) {
            Py_DECREF(names);
            goto fail;
        }
        PyTuple_SET_ITEM(names, i, name);
    }
    if (PyModule_AddObject(module, "FRAME_ROW", names) < 0) {
        Py_DECREF(names);
        goto fail;
    }
    if (PyModule_AddIntConstant(module, "SEEN", SEEN) || PyModule_AddIntConstant(module, "REJECTION", REJECTION)
        || PyModule_AddIntConstant(module, "ACTION", ACTION) || PyModule_AddIntConstant(module, "BEGAN", BEGAN)
        || PyModule_AddObjectRef(module, "RowQueue", (PyObject *)&RowQueueType) < 0)
        goto fail;
    return module;
fail:
    Py_DECREF(module);
    return NULL;
}
