#ifndef STORELENS_CARCHIVE_SHIM_H
#define STORELENS_CARCHIVE_SHIM_H
#include <archive.h>
#include <archive_entry.h>

// The AE_IF* file type constants are cast macros, which Swift does not import.
static const unsigned storelens_AE_IFREG = AE_IFREG;
static const unsigned storelens_AE_IFDIR = AE_IFDIR;
static const unsigned storelens_AE_IFLNK = AE_IFLNK;

// archive_set_error is variadic, which Swift cannot call: one fixed message instead.
static inline void storelens_archive_set_error(struct archive *a, const char *message) {
    archive_set_error(a, -1, "%s", message); // -1: ARCHIVE_ERRNO_MISC, not in the public header
}
#endif
