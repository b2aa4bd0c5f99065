// A read-only SQLite VFS for evidence: SQLite reads the original files where they lie, and can
// change nothing. The main file and the -wal are opened O_RDONLY (and never followed through a
// link); the wal-index SQLite needs lives in this process's memory, never in the -shm file; file
// locks are kept in memory too (nothing else writes these files); and every write, truncate,
// sync or delete is refused with SQLITE_READONLY and counted. The files are opened and read
// here (open O_RDONLY, pread), so none of the default VFS's side effects reaches them.

#include "evidence_vfs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static atomic_llong refused = 0;
static atomic_llong opened = 0;

long long storelens_evidence_vfs_refused(void) { return atomic_load(&refused); }
long long storelens_evidence_vfs_opened(void) { return atomic_load(&opened); }

// The same counts for the calling thread alone: SQLite calls a VFS on the thread that runs the
// statement, so a test counts its own connection's files exactly while other tests run beside it.
static _Thread_local long long refusedHere = 0;
static _Thread_local long long openedHere = 0;

long long storelens_evidence_vfs_refused_on_this_thread(void) { return refusedHere; }
long long storelens_evidence_vfs_opened_on_this_thread(void) { return openedHere; }

// The wal-index of one open main file: regions of the size SQLite asks for, zeroed when mapped
// (SQLite then rebuilds the index from the -wal, as it does for a store just pulled off a device).
typedef struct {
    void **regions;
    int count;
    int size;
} EvidenceShm;

typedef struct {
    sqlite3_file base;
    EvidenceShm shm;
    int fd;               // the evidence file, opened here O_RDONLY (-1 for an empty -wal)
    int empty;            // the -wal of the main-file-only view: a file of no bytes, not opened
} EvidenceFile;

typedef struct {
    int hideWAL;
} EvidenceFlavour;

static sqlite3_vfs *defaultVFS(void) { return sqlite3_vfs_find(NULL); }

static int refuse(void) {
    atomic_fetch_add(&refused, 1);
    refusedHere++;
    return SQLITE_READONLY;
}

static int fileClose(sqlite3_file *f) {
    EvidenceFile *e = (EvidenceFile *)f;
    for (int i = 0; i < e->shm.count; i++) free(e->shm.regions[i]);
    free(e->shm.regions);
    e->shm.regions = NULL;
    e->shm.count = 0;
    if (e->fd >= 0) close(e->fd);
    e->fd = -1;
    return SQLITE_OK;
}

static int fileRead(sqlite3_file *f, void *buffer, int amount, sqlite3_int64 offset) {
    EvidenceFile *e = (EvidenceFile *)f;
    int done = 0;
    while (!e->empty && done < amount) {
        ssize_t n = pread(e->fd, (char *)buffer + done, (size_t)(amount - done), (off_t)(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return SQLITE_IOERR_READ;
        if (n == 0) break;
        done += (int)n;
    }
    if (done == amount) return SQLITE_OK;
    // Past the end: the rest zeroed, as SQLite requires of a short read.
    memset((char *)buffer + done, 0, (size_t)(amount - done));
    return SQLITE_IOERR_SHORT_READ;
}

static int fileWrite(sqlite3_file *f, const void *b, int n, sqlite3_int64 o) { (void)f; (void)b; (void)n; (void)o; return refuse(); }
static int fileTruncate(sqlite3_file *f, sqlite3_int64 size) { (void)f; (void)size; return refuse(); }
static int fileSync(sqlite3_file *f, int flags) { (void)f; (void)flags; return refuse(); }

static int fileSize(sqlite3_file *f, sqlite3_int64 *size) {
    EvidenceFile *e = (EvidenceFile *)f;
    struct stat st;
    if (e->empty) {
        *size = 0;
        return SQLITE_OK;
    }
    if (fstat(e->fd, &st) != 0) return SQLITE_IOERR_FSTAT;
    *size = (sqlite3_int64)st.st_size;
    return SQLITE_OK;
}

// Locks in memory: no other process writes the evidence through SQLite while storelens reads it,
// and a lock taken on the file would itself be a use of it.
static int fileLock(sqlite3_file *f, int level) { (void)f; (void)level; return SQLITE_OK; }
static int fileUnlock(sqlite3_file *f, int level) { (void)f; (void)level; return SQLITE_OK; }
static int fileCheckReservedLock(sqlite3_file *f, int *out) { (void)f; *out = 0; return SQLITE_OK; }

static int fileControl(sqlite3_file *f, int op, void *arg) {
    (void)f; (void)op; (void)arg;
    // No hints, chunk sizes or persistence: nothing of the file is to change.
    return SQLITE_NOTFOUND;
}

static int fileSectorSize(sqlite3_file *f) { (void)f; return 4096; }
static int fileDeviceCharacteristics(sqlite3_file *f) { (void)f; return 0; }

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

// Whether a regular file is at `name` (no link followed). A -wal or -journal that is anything else
// (a FIFO, a device, a link) is not part of the store: storelens neither hashes nor reads it, and
// SQLite must not see it either (it would wait on a FIFO, or refuse the store).
static int isRegularFile(const char *name) {
    struct stat st;
    return lstat(name, &st) == 0 && S_ISREG(st.st_mode);
}

static int vfsOpen(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags, int *outFlags) {
    EvidenceFile *e = (EvidenceFile *)f;
    EvidenceFlavour *flavour = (EvidenceFlavour *)vfs->pAppData;
    memset(e, 0, sizeof(EvidenceFile));
    e->fd = -1;
    int evidence = flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL | SQLITE_OPEN_MAIN_JOURNAL);
    if (!evidence) {
        // SQLite's own temporary files (sorts, temp tables): not evidence. The default VFS opens
        // them in this same file object (it is larger than the default's), so its methods get
        // the object they expect.
        return defaultVFS()->xOpen(defaultVFS(), name, f, flags, outFlags);
    }
    int missing = (flags & SQLITE_OPEN_WAL) && !flavour->hideWAL && name && !isRegularFile(name);
    if ((flags & SQLITE_OPEN_WAL) && (flavour->hideWAL || missing)) {
        // The main file of a store in WAL mode is read with a -wal; where the view hides it or
        // the family has none, SQLite gets an empty one (nothing is created), and reads the main
        // file alone.
        e->empty = 1;
        if (outFlags) *outFlags = SQLITE_OPEN_READONLY;
        f->pMethods = &evidenceMethods;
        return SQLITE_OK;
    }
    // Opened here, not by the default VFS: read-only, never through a link, never created (a
    // missing file stays missing), and with none of its side effects (run as root, it gives a
    // -wal the database's owner, which changes the file's status time).
    // O_NONBLOCK: a FIFO in a store's place must not wait for a writer (it is refused below).
    if (!name) return SQLITE_CANTOPEN;
    int fd;
    do { fd = open(name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK); } while (fd < 0 && errno == EINTR);
    if (fd < 0) return SQLITE_CANTOPEN;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return SQLITE_CANTOPEN;
    }
    e->fd = fd;
    if (outFlags) *outFlags = (flags & ~(SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)) | SQLITE_OPEN_READONLY;
    atomic_fetch_add(&opened, 1);
    openedHere++;
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
    int isJournal = length > 8 && strcmp(name + length - 8, "-journal") == 0;
    if (flags == SQLITE_ACCESS_EXISTS && (isWAL || isJournal)) {
        *out = isRegularFile(name);
        return SQLITE_OK;
    }
    if (flags == SQLITE_ACCESS_READWRITE) {
        // Nothing here may be written.
        *out = 0;
        return SQLITE_OK;
    }
    return defaultVFS()->xAccess(defaultVFS(), name, flags, out);
}

// The folders above a store are the user's own layout (on macOS /tmp and every TMPDIR are links;
// home folders and evidence shares often are): they are resolved here, so SQLite's
// SQLITE_OPEN_NOFOLLOW, which refuses a link anywhere in the path, only ever sees the last
// component, the store's own name. That one is never followed (vfsOpen opens it O_NOFOLLOW), and
// neither are its sidecars, whose names SQLite derives from it.
static int vfsFullPathname(sqlite3_vfs *vfs, const char *name, int n, char *out) {
    (void)vfs;
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    if (*base == 0 || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) return SQLITE_CANTOPEN;
    char *folder;
    if (!slash) {
        folder = realpath(".", NULL);
    } else {
        size_t length = slash == name ? 1 : (size_t)(slash - name);
        char *typed = malloc(length + 1);
        if (!typed) return SQLITE_NOMEM;
        memcpy(typed, name, length);
        typed[length] = 0;
        folder = realpath(typed, NULL);
        free(typed);
    }
    if (!folder) return SQLITE_CANTOPEN;
    int written = snprintf(out, (size_t)n, "%s/%s", strcmp(folder, "/") == 0 ? "" : folder, base);
    free(folder);
    return written < 0 || written >= n ? SQLITE_CANTOPEN : SQLITE_OK;
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
    // Room for ours, or for the default VFS's own file (temporary files are opened in place).
    vfs->szOsFile = (int)sizeof(EvidenceFile) > d->szOsFile ? (int)sizeof(EvidenceFile) : d->szOsFile;
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
