// A file read in place is mapped (MappedFile) and may be another process's to change: a live app's
// store cut short by a checkpoint or a vacuum while storelens reads it. A read of a mapped page
// past the file's new end raises SIGBUS, which would end the process. Here a SIGBUS at an address
// inside a guarded mapping maps a page of zeros over the faulting page and returns, so the read
// completes (its bytes are wrong); the fault is counted, and the session that opened the file
// reports the file as changed (it was). Any other SIGBUS goes to the handler that was there before.

#include "mapped_file_guard.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SLOTS 4096
// A slot being filled: its length is not yet the one its base will have.
#define CLAIMED ((uintptr_t)1)

typedef struct {
    _Atomic(uintptr_t) base;
    _Atomic(size_t) length;
    atomic_llong faults;
} GuardedRange;

static GuardedRange ranges[SLOTS];
static atomic_llong faults = 0;
static struct sigaction previous;
static uintptr_t pageSize = 4096;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int installed = 0;

long long storelens_mapping_guard_faults(void) { return atomic_load(&faults); }

// Async-signal-safe: atomics, mmap and sigaction only.
static void onBusError(int signal, siginfo_t *info, void *context) {
    uintptr_t address = (uintptr_t)info->si_addr;
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t base = atomic_load(&ranges[i].base);
        if (base <= CLAIMED || address < base || address - base >= atomic_load(&ranges[i].length)) continue;
        void *page = (void *)(address & ~(pageSize - 1));
        if (mmap(page, pageSize, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) != MAP_FAILED) {
            atomic_fetch_add(&faults, 1);
            atomic_fetch_add(&ranges[i].faults, 1);
            return;
        }
        break;
    }
    // Not a guarded mapping: put back the handler that was there (the runtime's, or the default)
    // and return; the faulting instruction runs again and raises the signal to it.
    (void)signal;
    (void)context;
    sigaction(SIGBUS, &previous, NULL);
}

static void install(void) {
    long size = sysconf(_SC_PAGESIZE);
    if (size > 0) pageSize = (uintptr_t)size;
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_sigaction = onBusError;
    action.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&action.sa_mask);
    installed = sigaction(SIGBUS, &action, &previous) == 0;
}

int storelens_mapping_guard_add(const void *base, size_t length) {
    pthread_once(&once, install);
    if (!installed || base == NULL || length == 0) return -1;
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t expected = 0;
        // Claimed (CLAIMED, which no handler matches), then its length, then the base that makes it live.
        if (!atomic_compare_exchange_strong(&ranges[i].base, &expected, CLAIMED)) continue;
        atomic_store(&ranges[i].length, length);
        atomic_store(&ranges[i].faults, 0);
        atomic_store(&ranges[i].base, (uintptr_t)base);
        return 0;
    }
    return -1;
}

long long storelens_mapping_guard_remove(const void *base) {
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t expected = (uintptr_t)base;
        if (atomic_load(&ranges[i].base) != expected) continue;
        long long count = atomic_load(&ranges[i].faults);
        if (atomic_compare_exchange_strong(&ranges[i].base, &expected, 0)) return count;
    }
    return 0;
}

long long storelens_mapping_guard_faults_at(const void *base) {
    for (int i = 0; i < SLOTS; i++) {
        if (atomic_load(&ranges[i].base) == (uintptr_t)base) return atomic_load(&ranges[i].faults);
    }
    return 0;
}
