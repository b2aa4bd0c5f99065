#ifndef STORELENS_CSQLITE_SHIM_H
#define STORELENS_CSQLITE_SHIM_H
#include <sqlite3.h>

// Variadic and macro-only parts of the C API are not imported into Swift; these wrap them.

static inline int storelens_sqlite3_db_config_int(sqlite3 *db, int op, int value) {
    int out = 0;
    return sqlite3_db_config(db, op, value, &out);
}

// Reads a setting back without changing it (a negative value leaves it as it is); -1 on error.
static inline int storelens_sqlite3_db_config_get(sqlite3 *db, int op) {
    int out = -1;
    return sqlite3_db_config(db, op, -1, &out) == SQLITE_OK ? out : -1;
}

// An application function that returns 1, registered without SQLITE_INNOCUOUS: the kind of
// function trusted_schema=OFF keeps views and triggers from calling (the safe-open tests).
static void storelens_probe_function(sqlite3_context *context, int argc, sqlite3_value **argv) {
    (void)argc; (void)argv;
    sqlite3_result_int(context, 1);
}
static inline int storelens_sqlite3_register_probe(sqlite3 *db, const char *name) {
    return sqlite3_create_function_v2(db, name, 0, SQLITE_UTF8, 0, storelens_probe_function, 0, 0, 0);
}

// SQLITE_TRANSIENT is a cast macro ((sqlite3_destructor_type)-1).
static inline sqlite3_destructor_type storelens_sqlite3_transient(void) {
    return SQLITE_TRANSIENT;
}
#endif
