#include "build_info.h"

// A macro value, not a generated source file: the tree stays clean and every build compiles.
#define STORELENS_STRINGIFY2(x) #x
#define STORELENS_STRINGIFY(x) STORELENS_STRINGIFY2(x)

const char *storelens_build_commit(void) {
#ifdef STORELENS_COMMIT
    return STORELENS_STRINGIFY(STORELENS_COMMIT);
#else
    return "unknown";
#endif
}
