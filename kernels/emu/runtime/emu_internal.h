// cannbuild sandbox, private to libascendcl: what the emulated profiler
// (acl_profiler.cpp) needs from the runtime (acl_runtime.cpp).
#ifndef CANNBUILD_EMU_INTERNAL_H_
#define CANNBUILD_EMU_INTERNAL_H_

#include <cstdint>
#include <string>

#include "acl/acl.h"

namespace emu {

int32_t StreamId(aclrtStream stream);  // the id aclrtStreamGetId reports; 0 for the default stream
int CurrentDevice();                   // 0 before aclrtSetDevice
int64_t CubeCores();                   // AI Cores of the SoC (the Block Num of an AI_CORE kernel)
int64_t VectorCores();                 // Vector Cores of the SoC
std::string CannVersion();             // the toolkit's version, as the install record says
void FlushProfile();                   // write what the profiler recorded (once)

}  // namespace emu

#endif  // CANNBUILD_EMU_INTERNAL_H_
