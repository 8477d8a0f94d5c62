// cannbuild sandbox: libacl_op_compiler.so.  torch_npu sets and reads the
// operator compile options (ACL_OP_JIT_COMPILE and others) at start-up; the
// emulation keeps what was set, per option, and gives it back.  Compiling and
// running a legacy aclop (aclopCompileAndExecute) is not emulated: it fails
// from libascendcl with ACL_ERROR_RT_FEATURE_NOT_SUPPORT (entry_points.def).

#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "../runtime/acl_rt_extra.h"

namespace {

struct Options {
    std::mutex mutex;
    std::map<int, std::string> values;
};

Options &Store() {
    static Options options;
    return options;
}

}  // namespace

extern "C" {

aclError aclSetCompileopt(aclCompileOpt opt, const char *value) {
    if (value == nullptr) return ACL_ERROR_INVALID_PARAM;
    std::lock_guard<std::mutex> lock(Store().mutex);
    Store().values[static_cast<int>(opt)] = value;
    return ACL_SUCCESS;
}

size_t aclGetCompileoptSize(aclCompileOpt opt) {
    std::lock_guard<std::mutex> lock(Store().mutex);
    auto it = Store().values.find(static_cast<int>(opt));
    return (it == Store().values.end() ? 0 : it->second.size()) + 1;
}

aclError aclGetCompileopt(aclCompileOpt opt, char *value, size_t length) {
    if (value == nullptr || length == 0) return ACL_ERROR_INVALID_PARAM;
    std::lock_guard<std::mutex> lock(Store().mutex);
    auto it = Store().values.find(static_cast<int>(opt));
    std::string text = it == Store().values.end() ? "" : it->second;
    if (text.size() + 1 > length) return ACL_ERROR_INVALID_PARAM;
    std::memcpy(value, text.c_str(), text.size() + 1);
    return ACL_SUCCESS;
}

}  // extern "C"
