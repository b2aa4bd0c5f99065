#ifndef STORELENS_BUILD_INFO_H
#define STORELENS_BUILD_INFO_H

/// The git commit the binary was built from, as `make dist` passes it
/// (-Xcc -DSTORELENS_COMMIT=<hex>[-dirty]); "unknown" for any other build (outside git, plain
/// `swift build`), so a build never depends on git being there.
const char *storelens_build_commit(void);

#endif
