// cannbuild sandbox: stand-in for libopapi_math.so from the SoC ops package.
// The custom FlashAttention package links it (it calls math L0 APIs on a real
// install); the sandbox operator does not need anything from it.
extern "C" int aclemuOpapiMathVersion() { return 1; }
