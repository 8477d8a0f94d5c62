// cannbuild sandbox: the dlog entry points the OpDef sources log through (metadef
// pkg_inc/common/ge_common/debug/ge_log.h -> base/dlog_pub.h), linked into the sandbox's
// libregister: the real ones are runtime's dlog (libascendalog), which the sandbox does not
// build.  Every level is off, so nothing is formatted.
#include "dlog_pub.h"

extern "C" {
int32_t CheckLogLevel(int32_t moduleId, int32_t logLevel)
{
    (void)moduleId;
    (void)logLevel;
    return 0;
}

void DlogRecord(int32_t moduleId, int32_t level, const char *fmt, ...)
{
    (void)moduleId;
    (void)level;
    (void)fmt;
}
}
