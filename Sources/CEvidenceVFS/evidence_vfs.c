// A read-only SQLite VFS for evidence: SQLite reads the original files where they lie, and can
// change nothing. The main file and the -wal are opened O_RDONLY (and never followed through a
// link); the wal-index SQLite needs lives in this process's memory, never in the -shm file; file
// locks are kept in memory too (nothing else writes these files); and every write, truncate,
// sync or delete is refused with SQLITE_READONLY and counted. Reads go to the default VFS.

#include "evidence_vfs.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

static atomic_llong refused = 0;
static atomic_llong opened = 0;

long long storelens_evidence_vfs_refused(void) { return atomic_load(&refused); }
long long storelens_evidence_vfs_opened(void) { return atomic_load(&opened); }

// The wal-index of one open main file: regions of the size SQLite asks for, zeroed when mapped
// (SQLite then rebuilds the index from the -wal, as it does for a store just pulled off a device).
typedef struct {
    void **regions;
    int count;
    int size;
} EvidenceShm;

typedef struct {
    sqlite3_file base;
    sqlite3_file *real;   // the default VFS's file, allocated right after this struct
    EvidenceShm shm;
    int empty;            // the -wal of the main-file-only view: a file of no bytes, not opened
} EvidenceFile;

typedef struct {
    int hideWAL;
} EvidenceFlavour;

static sqlite3_vfs *defaultVFS(void) { return sqlite3_vfs_find(NULL); }

static int refuse(void) {
    atomic_fetch_add(&refused, 1);
    return SQLITE_READONLY;
}

static int fileClose(sqlite3_file *f) {
    EvidenceFile *e = (EvidenceFile *)f;
    for (int i = 0; i < e->shm.count; i++) free(e->shm.regions[i]);
    free(e->shm.regions);
    e->shm.regions = NULL;
    e->shm.count = 0;
    return !e->empty && e->real->pMethods ? e->real->pMethods->xClose(e->real) : SQLITE_OK;
}

static int fileRead(sqlite3_file *f, void *buffer, int amount, sqlite3_int64 offset) {
    EvidenceFile *e = (EvidenceFile *)f;
    if (e->empty) {
        memset(buffer, 0, (size_t)amount);
        return SQLITE_IOERR_SHORT_READ;
    }
    return e->real->pMethods->xRead(e->real, buffer, amount, offset);
}

static int fileWrite(sqlite3_file *f, const void *b, int n, sqlite3_int64 o) { (void)f; (void)b; (void)n; (void)o; return refuse(); }
static int fileTruncate(sqlite3_file *f, sqlite3_int64 size) { (void)f; (void)size; return refuse(); }
static int fileSync(sqlite3_file *f, int flags) { (void)f; (void)flags; return refuse(); }

static int fileSize(sqlite3_file *f, sqlite3_int64 *size) {
    EvidenceFile *e = (EvidenceFile *)f;
    if (e->empty) {
        *size = 0;
        return SQLITE_OK;
    }
    return e->real->pMethods->xFileSize(e->real, size);
}

// Locks in memory: no other process writes the evidence through SQLite while storelens reads it,
// and a lock taken on the file would itself be a use of it.
static int fileLock(sqlite3_file *f, int level) { (void)f; (void)level; return SQLITE_OK; }
static int fileUnlock(sqlite3_file *f, int level) { (void)f; (void)level; return SQLITE_OK; }
static int fileCheckReservedLock(sqlite3_file *f, int *out) { (void)f; *out = 0; return SQLITE_OK; }

static int fileControl(sqlite3_file *f, int op, void *arg) {
    EvidenceFile *e = (EvidenceFile *)f;
    if (e->empty) return SQLITE_NOTFOUND;
    switch (op) {
    // Size hints and chunk sizes would grow the file; persisting the WAL is a write at close.
    case SQLITE_FCNTL_SIZE_HINT:
    case SQLITE_FCNTL_CHUNK_SIZE:
        return SQLITE_OK;
    default:
        return e->real->pMethods->xFileControl(e->real, op, arg);
    }
}

static int fileSectorSize(sqlite3_file *f) {
    EvidenceFile *e = (EvidenceFile *)f;
    return e->empty ? 4096 : e->real->pMethods->xSectorSize(e->real);
}

static int fileDeviceCharacteristics(sqlite3_file *f) {
    EvidenceFile *e = (EvidenceFile *)f;
    return e->empty ? 0 : e->real->pMethods->xDeviceCharacteristics(e->real);
}

static int shmMap(sqlite3_file *f, int region, int size, int extend, void volatile **out) {
    EvidenceFile *e = (EvidenceFile *)f;
    *out = NULL;
    if (e->shm.size != 0 && e->shm.size != size) return SQLITE_IOERR_SHMMAP;
    e->shm.size = size;
    if (region >= e->shm.count) {
        if (!extend) return SQLITE_OK;
        void **grown = realloc(e->shm.regions, sizeof(void *) * (size_t)(region + 1));
        if (!grown) return SQLITE_NOMEM;
        e->shm.regions = grown;
        for (int i = e->shm.count; i <= region; i++) {
            grown[i] = calloc(1, (size_t)size);
            if (!grown[i]) {
                e->shm.count = i;
                return SQLITE_NOMEM;
            }
        }
        e->shm.count = region + 1;
    }
    *out = e->shm.regions[region];
    return SQLITE_OK;
}

static int shmLock(sqlite3_file *f, int offset, int n, int flags) { (void)f; (void)offset; (void)n; (void)flags; return SQLITE_OK; }
static void shmBarrier(sqlite3_file *f) { (void)f; atomic_thread_fence(memory_order_seq_cst); }

static int shmUnmap(sqlite3_file *f, int deleteFlag) {
    (void)deleteFlag;  // the memory is ours: there is no -shm file to delete
    EvidenceFile *e = (EvidenceFile *)f;
    for (int i = 0; i < e->shm.count; i++) free(e->shm.regions[i]);
    free(e->shm.regions);
    e->shm.regions = NULL;
    e->shm.count = 0;
    return SQLITE_OK;
}

static const sqlite3_io_methods evidenceMethods = {
    2,  // shared memory, no memory-mapped reads (xFetch)
    fileClose, fileRead, fileWrite, fileTruncate, fileSync, fileSize, fileLock, fileUnlock,
    fileCheckReservedLock, fileControl, fileSectorSize, fileDeviceCharacteristics,
    shmMap, shmLock, shmBarrier, shmUnmap,
    NULL, NULL
};

static int vfsOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *outFlags) {
    EvidenceFile *e = (EvidenceFile *)f;
    EvidenceFlavour *flavour = (EvidenceFlavour *)vfs->pAppData;
    memset(e, 0, sizeof(EvidenceFile));
    e->real = (sqlite3_file *)&e[1];
    int evidence = flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL);
    if (!evidence) {
        // SQLite's own temporary files (sorts, temp tables): not evidence; the default VFS's.
        int rc = defaultVFS()->xOpen(defaultVFS(), name, e->real, flags, outFlags);
        if (rc == SQLITE_OK) f->pMethods = e->real->pMethods;
        return rc;
    }
    int missing = 0;
    if ((flags & SQLITE_OPEN_WAL) && !flavour->hideWAL && name) {
        int exists = 0;
        if (defaultVFS()->xAccess(defaultVFS(), name, SQLITE_ACCESS_EXISTS, &exists) == SQLITE_OK && !exists) missing = 1;
    }
    if ((flags & SQLITE_OPEN_WAL) && (flavour->hideWAL || missing)) {
        // The main file of a store in WAL mode is read with a -wal; where the view hides it or
        // the family has none, SQLite gets an empty one (nothing is created), and reads the main
        // file alone.
        e->empty = 1;
        if (outFlags) *outFlags = SQLITE_OPEN_READONLY;
        f->pMethods = &evidenceMethods;
        return SQLITE_OK;
    }
    // SQLite asks to create the -wal if it is missing: here a missing file stays missing (the
    // open without SQLITE_OPEN_CREATE fails), and nothing is deleted on close.
    int readOnly = (flags & ~(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_DELETEONCLOSE | SQLITE_OPEN_EXCLUSIVE))
        | SQLITE_OPEN_READONLY | SQLITE_OPEN_NOFOLLOW;
    int rc = defaultVFS()->xOpen(defaultVFS(), name, e->real, readOnly, outFlags);
    if (rc != SQLITE_OK) return rc;
    if (outFlags) *outFlags = (*outFlags & ~SQLITE_OPEN_READWRITE) | SQLITE_OPEN_READONLY;
    atomic_fetch_add(&opened, 1);
    f->pMethods = &evidenceMethods;
    return SQLITE_OK;
}

static int vfsDelete(sqlite3_vfs *vfs, const char *name, int syncDir) { (void)vfs; (void)name; (void)syncDir; return refuse(); }

static int vfsAccess(sqlite3_vfs *vfs, const char *name, int flags, int *out) {
    EvidenceFlavour *flavour = (EvidenceFlavour *)vfs->pAppData;
    size_t length = strlen(name);
    int isWAL = length > 4 && strcmp(name + length - 4, "-wal") == 0;
    int isShm = length > 4 && strcmp(name + length - 4, "-shm") == 0;
    if ((isWAL && flavour->hideWAL) || isShm) {
        // The -shm is never used (the wal-index is in memory); a hidden -wal is not there.
        *out = 0;
        return SQLITE_OK;
    }
    if (flags == SQLITE_ACCESS_READWRITE) {
        // Nothing here may be written.
        *out = 0;
        return SQLITE_OK;
    }
    return defaultVFS()->xAccess(defaultVFS(), name, flags, out);
}

static int vfsFullPathname(sqlite3_vfs *vfs, const char *name, int n, char *out) {
    (void)vfs;
    return defaultVFS()->xFullPathname(defaultVFS(), name, n, out);
}
static void *vfsDlOpen(sqlite3_vfs *vfs, const char *name) { (void)vfs; return defaultVFS()->xDlOpen(defaultVFS(), name); }
static void vfsDlError(sqlite3_vfs *vfs, int n, char *out) { (void)vfs; defaultVFS()->xDlError(defaultVFS(), n, out); }
static void (*vfsDlSym(sqlite3_vfs *vfs, void *h, const char *s))(void) { (void)vfs; return defaultVFS()->xDlSym(defaultVFS(), h, s); }
static void vfsDlClose(sqlite3_vfs *vfs, void *h) { (void)vfs; defaultVFS()->xDlClose(defaultVFS(), h); }
static int vfsRandomness(sqlite3_vfs *vfs, int n, char *out) { (void)vfs; return defaultVFS()->xRandomness(defaultVFS(), n, out); }
static int vfsSleep(sqlite3_vfs *vfs, int us) { (void)vfs; return defaultVFS()->xSleep(defaultVFS(), us); }
static int vfsCurrentTime(sqlite3_vfs *vfs, double *out) { (void)vfs; return defaultVFS()->xCurrentTime(defaultVFS(), out); }
static int vfsGetLastError(sqlite3_vfs *vfs, int n, char *out) { (void)vfs; return defaultVFS()->xGetLastError(defaultVFS(), n, out); }
static int vfsCurrentTimeInt64(sqlite3_vfs *vfs, sqlite3_int64 *out) {
    (void)vfs;
    sqlite3_vfs *d = defaultVFS();
    if (d->iVersion >= 2 && d->xCurrentTimeInt64) return d->xCurrentTimeInt64(d, out);
    double now = 0;
    int rc = d->xCurrentTime(d, &now);
    *out = (sqlite3_int64)(now * 86400000.0);
    return rc;
}

static EvidenceFlavour withWAL = {0}, withoutWAL = {1};
static sqlite3_vfs evidenceVFS, evidenceNoWALVFS;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int registered = SQLITE_ERROR;

static void fill(sqlite3_vfs *vfs, const char *name, EvidenceFlavour *flavour) {
    sqlite3_vfs *d = defaultVFS();
    memset(vfs, 0, sizeof(*vfs));
    vfs->iVersion = 2;
    vfs->szOsFile = (int)sizeof(EvidenceFile) + d->szOsFile;
    vfs->mxPathname = d->mxPathname;
    vfs->zName = name;
    vfs->pAppData = flavour;
    vfs->xOpen = vfsOpen;
    vfs->xDelete = vfsDelete;
    vfs->xAccess = vfsAccess;
    vfs->xFullPathname = vfsFullPathname;
    vfs->xDlOpen = vfsDlOpen;
    vfs->xDlError = vfsDlError;
    vfs->xDlSym = vfsDlSym;
    vfs->xDlClose = vfsDlClose;
    vfs->xRandomness = vfsRandomness;
    vfs->xSleep = vfsSleep;
    vfs->xCurrentTime = vfsCurrentTime;
    vfs->xGetLastError = vfsGetLastError;
    vfs->xCurrentTimeInt64 = vfsCurrentTimeInt64;
}

static void registerOnce(void) {
    if (sqlite3_initialize() != SQLITE_OK || !defaultVFS()) return;
    fill(&evidenceVFS, "storelens-evidence", &withWAL);
    fill(&evidenceNoWALVFS, "storelens-evidence-nowal", &withoutWAL);
    int rc = sqlite3_vfs_register(&evidenceVFS, 0);
    if (rc == SQLITE_OK) rc = sqlite3_vfs_register(&evidenceNoWALVFS, 0);
    registered = rc;
}

int storelens_evidence_vfs_register(void) {
    pthread_once(&once, registerOnce);
    return registered;
}
