#ifndef STORELENS_MAPPED_FILE_GUARD_H
#define STORELENS_MAPPED_FILE_GUARD_H

#include <stddef.h>

/// Guards a read-only file mapping: should another process cut the file short while it is mapped,
/// a read past the new end (SIGBUS) gets a page of zeros instead of ending the process, and is
/// counted. Returns 0, or -1 when no slot is free (the mapping is then not guarded).
int storelens_mapping_guard_add(const void *base, size_t length);

/// Stops guarding the mapping at `base` (before it is unmapped); returns how many of its pages
/// were read past its file's end.
long long storelens_mapping_guard_remove(const void *base);

/// How many pages of the guarded mapping at `base` were read past its file's end so far.
long long storelens_mapping_guard_faults_at(const void *base);

/// Pages of guarded mappings read past their file's end since the process started.
long long storelens_mapping_guard_faults(void);

#endif
