/* cannbuild sandbox: graph-engine error codes are not emulated; kept for the include chain. */
#ifndef CANNBUILD_EMU_GE_ERROR_CODES_H_
#define CANNBUILD_EMU_GE_ERROR_CODES_H_
#endif  // CANNBUILD_EMU_GE_ERROR_CODES_H_
