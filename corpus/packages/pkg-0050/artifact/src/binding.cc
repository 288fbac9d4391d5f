#include <node_api.h>
// Thin N-API wrapper around liblmdb (open, get, put, close).
