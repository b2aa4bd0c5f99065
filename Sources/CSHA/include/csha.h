#ifndef STORELENS_CSHA_H
#define STORELENS_CSHA_H
#include <stddef.h>
#include <stdint.h>

/// Whether this CPU has the SHA extensions (x86-64 SHA-NI). Always 0 elsewhere.
int storelens_sha256_hardware_available(void);

/// Runs the SHA-256 compression function over `blocks` 64-byte blocks with the SHA extensions.
/// Call only when storelens_sha256_hardware_available() returned 1.
void storelens_sha256_blocks(uint32_t state[8], const uint8_t *data, size_t blocks);
#endif
