#ifndef STORELENS_CSQLITE_SHIM_H
#define STORELENS_CSQLITE_SHIM_H
#include <sqlite3.h>

// Variadic and macro-only parts of the C API are not imported into Swift; these wrap them.

static inline int storelens_sqlite3_db_config_int(sqlite3 *db, int op, int value) {
    int out = 0;
    return sqlite3_db_config(db, op, value, &out);
}

// SQLITE_TRANSIENT is a cast macro ((sqlite3_destructor_type)-1).
static inline sqlite3_destructor_type storelens_sqlite3_transient(void) {
    return SQLITE_TRANSIENT;
}
#endif
