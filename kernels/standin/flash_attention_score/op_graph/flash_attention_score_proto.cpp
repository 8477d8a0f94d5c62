// cannbuild sandbox stand-in for the operator prototype library
// (libcust_opsproto_rt2.0.so): graph-mode registration is not emulated.
extern "C" const char *CannbuildStandinOpProto() { return "FlashAttentionScore"; }
