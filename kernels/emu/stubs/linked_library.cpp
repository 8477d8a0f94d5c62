// cannbuild sandbox: libhccl, libge_runner, libgraph and libacl_tdt_channel.
// torch_npu links them (DT_NEEDED) but the forward FlashAttention route calls
// nothing of theirs: collectives (HCCL), graph mode (GE) and data tunnels (TDT)
// are not emulated.  Each library links libascendcl, as the real ones do, so
// a dlsym on its handle finds the runtime entry points.
extern "C" int aclemuLinkedLibraryName() { return 0; }
