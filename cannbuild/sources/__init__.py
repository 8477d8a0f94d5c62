"""Sources: everything a build takes from the network, pinned.

Mechanism: `fetch` (the network: git, downloads, mirrors, retries, offline),
`checkout` (git caches, checkouts at a commit, the download cache).  Policy:
`pinning` (which commit and archive each repo gets: from the lock or by resolving,
made ready per repo in the background), `archives` (what each checkout's CMake
downloads and where its ref takes a copy), `lock` (cannbuild.lock), `bundle`
(offline bundles).
"""
