/* The ZMQ channel's one-change messages in C: the producer's encoding and the server's reading
 * of one change, the per-message hot paths (every set() and delete() is one message).
 *
 * Each function does exactly what its Python twin does (encoder.py's OneChangeEncoder.encode,
 * one_change.py's read_single) for the inputs it takes, and hands every other input back:
 * send_one() calls the Python encoder, read_single() returns None for the general reader.
 * send_one() also hands the message to libzmq itself (zmq_send), as the C++ producer does.
 * tests/test_zmq_speedups.py checks both against the Python code on random and hostile input.
 * The package works without this module (a machine without a C compiler): speedups.py says
 * which is in use.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define SIZE_T 8
/* MQ_RESPONSE_MAX_COUNT: C++ sends and receives less than this (serializer.MAX_MESSAGE_SIZE) */
#define MAX_MESSAGE_SIZE (16 * 1024 * 1024)
/* read_single() reads messages under this size (serializer._LARGE) */
#define LARGE (64 * 1024)
/* field counts written from the table of count texts (serializer._COUNT_PAIRS) */
#define COUNTS 1024

/* set by init(): KeyOpFieldsValues and the op strings SET and DEL (fields.py's objects) */
static PyObject *change_type = NULL;
static PyObject *set_op = NULL;
static PyObject *del_op = NULL;

static inline uint64_t read_size(const unsigned char *p)
{
    uint64_t n = 0;
    for (int i = SIZE_T - 1; i >= 0; i--)
        n = (n << 8) | p[i];
    return n;
}

static inline unsigned char *write_size(unsigned char *p, uint64_t n)
{
    for (int i = 0; i < SIZE_T; i++) {
        p[i] = (unsigned char)(n & 0xff);
        n >>= 8;
    }
    return p + SIZE_T;
}

/* An ASCII str of the n bytes at p (every byte was checked to be under 128). */
static inline PyObject *ascii_text(const unsigned char *p, Py_ssize_t n)
{
    PyObject *s = PyUnicode_New(n, 127);
    if (s != NULL && n > 0)
        memcpy(PyUnicode_1BYTE_DATA(s), p, (size_t)n);
    return s;
}

/* The string whose length is at *pos: its offset and length, *pos moved past it; 0 when the
 * length or the string runs past the end. */
static inline int next_string(const unsigned char *data, Py_ssize_t size, Py_ssize_t *pos, Py_ssize_t *at,
                              Py_ssize_t *len)
{
    if (size - *pos < SIZE_T)
        return 0;
    const uint64_t n = read_size(data + *pos);
    *at = *pos + SIZE_T;
    if (n > (uint64_t)(size - *at))
        return 0;
    *len = (Py_ssize_t)n;
    *pos = *at + *len;
    return 1;
}

/* The field count written as decimal text without leading zeros, under COUNTS; -1 otherwise. */
static int count_of(const unsigned char *p, uint64_t n)
{
    if (n == 0 || n > 4 || (p[0] == '0' && n > 1))
        return -1;
    int value = 0;
    for (uint64_t i = 0; i < n; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        value = value * 10 + (p[i] - '0');
    }
    return value < COUNTS ? value : -1;
}

static PyObject *speedups_init(PyObject *module, PyObject *args)
{
    PyObject *kind, *set, *del;
    if (!PyArg_ParseTuple(args, "O!UU:init", &PyType_Type, &kind, &set, &del))
        return NULL;
    if (!PyType_IsSubtype((PyTypeObject *)kind, &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "init: the change type must be a tuple subclass");
        return NULL;
    }
    Py_INCREF(kind);
    Py_INCREF(set);
    Py_INCREF(del);
    Py_XSETREF(change_type, kind);
    Py_XSETREF(set_op, set);
    Py_XSETREF(del_op, del);
    Py_RETURN_NONE;
}

/* read_single(data, head): one_change.read_single. */
static PyObject *speedups_read_single(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyBytes_Check(args[0]) || !PyBytes_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "read_single(data: bytes, head: bytes)");
        return NULL;
    }
    if (change_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "read_single: init() was not called");
        return NULL;
    }
    const unsigned char *data = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    const Py_ssize_t size = PyBytes_GET_SIZE(args[0]);
    const Py_ssize_t head_size = PyBytes_GET_SIZE(args[1]);
    const Py_ssize_t start = SIZE_T + head_size;
    if (!(start + SIZE_T <= size && size < LARGE))
        Py_RETURN_NONE;
    if (memcmp(data + SIZE_T, PyBytes_AS_STRING(args[1]), (size_t)head_size) != 0)
        Py_RETURN_NONE;
    for (Py_ssize_t i = 0; i < size; i++)
        if (data[i] & 0x80)
            Py_RETURN_NONE;

    /* Lengths first, all checked before any object is made: the key, the field count, then
     * each field and value. */
    Py_ssize_t pos = start, key_at = 0, key_len = 0, count_at = 0, count_len = 0, at = 0, len = 0;
    if (!next_string(data, size, &pos, &key_at, &key_len) || !next_string(data, size, &pos, &count_at, &count_len))
        Py_RETURN_NONE;
    const int fields = count_of(data + count_at, (uint64_t)count_len);
    if (fields < 0 || read_size(data) != (uint64_t)fields + 2)
        Py_RETURN_NONE;
    const Py_ssize_t strings_at = pos;
    for (int i = 0; i < 2 * fields; i++)
        if (!next_string(data, size, &pos, &at, &len))
            Py_RETURN_NONE;
    if (pos != size)
        Py_RETURN_NONE;

    PyObject *fvs = PyList_New(fields);
    if (fvs == NULL)
        return NULL;
    pos = strings_at;
    for (int i = 0; i < fields; i++) {
        PyObject *pair = PyTuple_New(2);
        if (pair == NULL)
            goto fail;
        PyList_SET_ITEM(fvs, i, pair);
        for (int j = 0; j < 2; j++) {
            next_string(data, size, &pos, &at, &len); /* checked above */
            PyObject *s = ascii_text(data + at, len);
            if (s == NULL)
                goto fail;
            PyTuple_SET_ITEM(pair, j, s);
        }
    }
    PyObject *key = ascii_text(data + key_at, key_len);
    if (key == NULL)
        goto fail;
    PyObject *change = ((PyTypeObject *)change_type)->tp_alloc((PyTypeObject *)change_type, 3);
    if (change == NULL) {
        Py_DECREF(key);
        goto fail;
    }
    PyObject *op = fields ? set_op : del_op;
    Py_INCREF(op);
    PyTuple_SET_ITEM(change, 0, key);
    PyTuple_SET_ITEM(change, 1, op);
    PyTuple_SET_ITEM(change, 2, fvs);
    return change;
fail:
    Py_DECREF(fvs);
    return NULL;
}

/* The UTF-8 bytes of a str, or NULL with no error set when it cannot be encoded strictly
 * (surrogate escapes: the Python encoder handles those). */
static inline const char *utf8_of(PyObject *s, Py_ssize_t *len)
{
    const char *p = PyUnicode_AsUTF8AndSize(s, len);
    if (p == NULL)
        PyErr_Clear();
    return p;
}

/* The pair at items[i] as (field, value) when it is a 2-tuple or a 2-list. */
static inline int pair_of(PyObject *pair, PyObject **field, PyObject **value)
{
    if (PyTuple_CheckExact(pair) && PyTuple_GET_SIZE(pair) == 2) {
        *field = PyTuple_GET_ITEM(pair, 0);
        *value = PyTuple_GET_ITEM(pair, 1);
        return 1;
    }
    if (PyList_CheckExact(pair) && PyList_GET_SIZE(pair) == 2) {
        *field = PyList_GET_ITEM(pair, 0);
        *value = PyList_GET_ITEM(pair, 1);
        return 1;
    }
    return 0;
}

/* A change as send_one() takes it: what the message needs, checked. */
typedef struct {
    PyObject *head;
    const char *key;
    Py_ssize_t key_len;
    PyObject *const *items;
    Py_ssize_t fields;
    char count_text[8];
    int count_len;
    Py_ssize_t size; /* of the message */
} Change;

/* Fill `c` from (head, key, fvs): 1, or 0 for what the Python encoder must take (strings that
 * are not str or have surrogate escapes, pairs that are not 2-tuples or 2-lists, 1,024 fields or
 * more, a message of MAX_MESSAGE_SIZE bytes or more: it then encodes it or raises its error).
 * Nothing here runs Python code, so a list cannot change before write_change() runs. */
static int measure(Change *c, PyObject *head, PyObject *key, PyObject *fvs)
{
    if (PyList_Check(fvs)) {
        c->fields = PyList_GET_SIZE(fvs);
    } else if (PyTuple_Check(fvs)) {
        c->fields = PyTuple_GET_SIZE(fvs);
    } else {
        return 0;
    }
    c->items = PySequence_Fast_ITEMS(fvs);
    if (c->fields >= COUNTS || !PyUnicode_Check(key))
        return 0;
    c->key = utf8_of(key, &c->key_len);
    if (c->key == NULL)
        return 0;
    c->head = head;
    c->count_len = snprintf(c->count_text, sizeof c->count_text, "%d", (int)c->fields);
    /* count | head | key | field count | fields */
    Py_ssize_t total = SIZE_T + PyBytes_GET_SIZE(head) + SIZE_T + c->key_len + SIZE_T + c->count_len;
    for (Py_ssize_t i = 0; i < c->fields; i++) {
        PyObject *field, *value;
        Py_ssize_t f_len, v_len;
        if (!pair_of(c->items[i], &field, &value) || !PyUnicode_Check(field) || !PyUnicode_Check(value)
            || utf8_of(field, &f_len) == NULL || utf8_of(value, &v_len) == NULL)
            return 0;
        total += 2 * SIZE_T + f_len + v_len;
        if (total >= MAX_MESSAGE_SIZE)
            return 0;
    }
    c->size = total;
    return total < MAX_MESSAGE_SIZE;
}

/* The message of a measured change, at p (c->size bytes). */
static void write_change(const Change *c, unsigned char *p)
{
    const Py_ssize_t head_size = PyBytes_GET_SIZE(c->head);
    p = write_size(p, (uint64_t)c->fields + 2);
    memcpy(p, PyBytes_AS_STRING(c->head), (size_t)head_size);
    p += head_size;
    p = write_size(p, (uint64_t)c->key_len);
    memcpy(p, c->key, (size_t)c->key_len);
    p += c->key_len;
    p = write_size(p, (uint64_t)c->count_len);
    memcpy(p, c->count_text, (size_t)c->count_len);
    p += c->count_len;
    for (Py_ssize_t i = 0; i < c->fields; i++) {
        PyObject *strings[2];
        pair_of(c->items[i], &strings[0], &strings[1]);
        for (int j = 0; j < 2; j++) {
            Py_ssize_t len;
            const char *text = PyUnicode_AsUTF8AndSize(strings[j], &len); /* kept by measure() */
            p = write_size(p, (uint64_t)len);
            memcpy(p, text, (size_t)len);
            p += len;
        }
    }
}

static PyObject *message_of(const Change *c)
{
    PyObject *message = PyBytes_FromStringAndSize(NULL, c->size);
    if (message != NULL)
        write_change(c, (unsigned char *)PyBytes_AS_STRING(message));
    return message;
}

/* libzmq's zmq_send, the one pyzmq's sockets were made by (set by init_send()) */
typedef int (*zmq_send_function)(void *socket, const void *buf, size_t len, int flags);
static zmq_send_function zmq_send_p = NULL;
#define ZMQ_DONTWAIT 1
/* the message being sent: libzmq copies it before zmq_send returns, and the GIL is held */
static unsigned char *send_buffer = NULL;
static Py_ssize_t send_buffer_size = 0;

static PyObject *speedups_init_send(PyObject *module, PyObject *arg)
{
    void *address = PyLong_AsVoidPtr(arg);
    if (address == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_ValueError, "init_send: a null address");
        return NULL;
    }
    zmq_send_p = (zmq_send_function)address;
    Py_RETURN_NONE;
}

/* send_one(head, fallback, socket, key, fvs): OneChangeEncoder.encode's message of the change
 * (fallback(key, fvs), that encoder, for what measure() does not take) handed to the socket
 * (libzmq's socket_t at that address; 0: none) as zmq_send(ZMQ_DONTWAIT) does: None when it
 * was, else the message, for the caller to send (no socket, the queue full, an error: the
 * caller's send retries or says why, with libzmq's errno). */
static PyObject *speedups_send_one(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyBytes_Check(args[0])) {
        PyErr_SetString(PyExc_TypeError, "send_one(head: bytes, fallback, socket: int, key, fvs)");
        return NULL;
    }
    void *socket = PyLong_AsVoidPtr(args[2]);
    if (socket == NULL && PyErr_Occurred())
        return NULL;
    Change c;
    if (!measure(&c, args[0], args[3], args[4]))
        return PyObject_CallFunctionObjArgs(args[1], args[3], args[4], NULL);
    if (socket == NULL || zmq_send_p == NULL || c.size > LARGE) /* large ones: sent without a copy */
        return message_of(&c);
    if (c.size > send_buffer_size) {
        unsigned char *grown = PyMem_Realloc(send_buffer, (size_t)c.size);
        if (grown == NULL)
            return PyErr_NoMemory();
        send_buffer = grown;
        send_buffer_size = c.size;
    }
    write_change(&c, send_buffer);
    if (zmq_send_p(socket, send_buffer, (size_t)c.size, ZMQ_DONTWAIT) >= 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)send_buffer, c.size);
}

static PyMethodDef speedups_methods[] = {
    {"init", (PyCFunction)speedups_init, METH_VARARGS,
     "init(change_type, set_op, del_op): what read_single() returns its changes as."},
    {"read_single", (PyCFunction)(void (*)(void))speedups_read_single, METH_FASTCALL,
     "read_single(data, head): one_change.read_single, in C."},
    {"init_send", (PyCFunction)speedups_init_send, METH_O,
     "init_send(address): the zmq_send of the libzmq pyzmq uses, for send_one()."},
    {"send_one", (PyCFunction)(void (*)(void))speedups_send_one, METH_FASTCALL,
     "send_one(head, fallback, socket, key, fvs): the change's message, zmq_send(ZMQ_DONTWAIT) to the socket."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT, "_speedups", "The ZMQ channel's one-change messages in C.", -1, speedups_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__speedups(void)
{
    return PyModule_Create(&speedups_module);
}
