#include <Python.h>
/* C implementation elided in this sample */
static struct PyModuleDef m = {PyModuleDef_HEAD_INIT, "_speedups", NULL, -1, NULL};
PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&m); }
