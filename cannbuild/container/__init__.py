"""Container builds: the build context rendered from the lock (`context`), the engines that
build it (`engine`), and the `docker run` line for this host's NPUs (`run`)."""
