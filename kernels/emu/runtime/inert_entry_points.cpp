// cannbuild sandbox: the INERT and UNSUPPORTED entry points of
// entry_points.def, generated from that list (see its header for the kinds).
// No ACL header is included: these functions are defined without parameters,
// which the real prototypes would contradict.

#include <cstdio>

#include "emu/emu_runtime.h"

namespace {

constexpr int kAclSuccess = 0;
constexpr int kFeatureNotSupported = 207000;  // ACL_ERROR_RT_FEATURE_NOT_SUPPORT

int Unsupported(const char *api) {
    char msg[256];
    std::snprintf(msg, sizeof(msg),
                  "EE1001: %s is not supported by the cannbuild sandbox (a CPU emulation of the NPU has no "
                  "kernel binaries, physical memory mapping or legacy aclop compiler).",
                  api);
    aclemuSetRecentErrMsg(msg);
    return kFeatureNotSupported;
}

}  // namespace

#define EMU_SEMANTIC(name)
#define EMU_INERT(name) \
    extern "C" ACL_FUNC_VISIBILITY int name() { return kAclSuccess; }
#define EMU_UNSUPPORTED(name) \
    extern "C" ACL_FUNC_VISIBILITY int name() { return Unsupported(#name); }
#include "entry_points.def"
#undef EMU_SEMANTIC
#undef EMU_INERT
#undef EMU_UNSUPPORTED
