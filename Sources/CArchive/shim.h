#ifndef STORELENS_CARCHIVE_SHIM_H
#define STORELENS_CARCHIVE_SHIM_H
#include <archive.h>
#include <archive_entry.h>

// The AE_IF* file type constants are cast macros, which Swift does not import.
static const unsigned storelens_AE_IFREG = AE_IFREG;
static const unsigned storelens_AE_IFDIR = AE_IFDIR;
static const unsigned storelens_AE_IFLNK = AE_IFLNK;
#endif
