#ifndef STORELENS_CISAL_SHIM_H
#define STORELENS_CISAL_SHIM_H
// ISA-L's igzip (Debian libisal-dev): DEFLATE decoding about 1.5× as fast as zlib's, used for the
// gzip layer of .tar.gz archives on Linux. libarchive still reads every archive format.
#include <isa-l/igzip_lib.h>
// CRC-32 of zip entries read through the central directory.
#include <isa-l/crc.h>
#endif
