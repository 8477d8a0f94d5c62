# Not in the real repositories: the emulated host's network (cannbuild sandbox, 9.1 stand-ins).
# A real host reaches https://gitcode.com/ and https://cann-3rd.obs.cn-north-4.myhuaweicloud.com/
# itself; the sandbox serves both from its mirror, whose address the sandbox toolkit's set_env.sh
# exports as CANNBUILD_SANDBOX_NETWORK (a file:// URL; the OBS host's files sit under a folder of
# its name).  Unset, or naming a place that does not hold what is asked for, it is a host
# without network: the download or clone fails as it would there.  Nothing here ever reaches
# the internet: every URL is rewritten to the sandbox network or refused.
include_guard(GLOBAL)

# The sandbox network's URL for an upstream URL, and the host name a failure names.
function(__sandbox_route url out_url out_host)
    set(network "$ENV{CANNBUILD_SANDBOX_NETWORK}")
    if(network STREQUAL "")
        set(network "file:///cannbuild-sandbox-without-network/")
    endif()
    if(url MATCHES "^https://gitcode\\.com/(.*)$")
        set(host gitcode.com)
        set(routed "${network}${CMAKE_MATCH_1}")
    elseif(url MATCHES "^git@gitcode\\.com:(.*)$")
        set(host gitcode.com)
        set(routed "${network}${CMAKE_MATCH_1}")
    elseif(url MATCHES "^https://(cann-3rd\\.obs\\.cn-north-4\\.myhuaweicloud\\.com)/(.*)$")
        set(host "${CMAKE_MATCH_1}")
        set(routed "${network}${CMAKE_MATCH_1}/${CMAKE_MATCH_2}")
    else()
        string(REGEX REPLACE "^[a-z+]+://([^/:]+).*$" "\\1" host "${url}")
        set(routed "")
    endif()
    set(${out_url} "${routed}" PARENT_SCOPE)
    set(${out_host} "${host}" PARENT_SCOPE)
endfunction()

# An archive URL in `var` (a local path stays as it is): the sandbox network's copy, or the
# error curl gives on a host without network.  With `download_dir`, a copy already there is
# left to the caller's own hash check (ExternalProject downloads nothing then).
function(sandbox_download var)
    if(NOT "${${var}}" MATCHES "^[a-z]+://" OR "${${var}}" MATCHES "^file://")
        return()
    endif()
    if(ARGC GREATER 1)
        get_filename_component(name "${${var}}" NAME)
        if(EXISTS "${ARGV1}/${name}")
            return()
        endif()
    endif()
    __sandbox_route("${${var}}" routed host)
    string(REGEX REPLACE "^file://" "" path "${routed}")
    if(routed STREQUAL "" OR NOT EXISTS "${path}")
        message(FATAL_ERROR "Each download failed!
    error: downloading '${${var}}' failed
          status_code: 6
          status_string: \"Couldn't resolve host name\"
          log:
          --- LOG BEGIN ---
          Could not resolve host: ${host}
          --- LOG END ---")
    endif()
    set(${var} "${routed}" PARENT_SCOPE)
endfunction()

# Every git this configure starts (FetchContent's clones, `git fetch` in a local copy) goes
# through the sandbox network: gitcode.com is rewritten to it and no transport but file:// is
# allowed.  The rules are appended to the GIT_CONFIG_* ones already in the environment
# (cannbuild's mirror rules come first, so they win where both match).
function(sandbox_route_git)
    get_property(done GLOBAL PROPERTY SANDBOX_GIT_ROUTED)
    if(done)
        return()
    endif()
    set_property(GLOBAL PROPERTY SANDBOX_GIT_ROUTED TRUE)
    __sandbox_route("https://gitcode.com/" network host)
    set(count "$ENV{GIT_CONFIG_COUNT}")
    if(count STREQUAL "")
        set(count 0)
    endif()
    foreach(pair
            "url.${network}.insteadOf=https://gitcode.com/"
            "url.${network}.insteadOf=git@gitcode.com:"
            "protocol.allow=never"
            "protocol.file.allow=always")
        string(FIND "${pair}" "=" eq)
        string(SUBSTRING "${pair}" 0 ${eq} key)
        math(EXPR from "${eq} + 1")
        string(SUBSTRING "${pair}" ${from} -1 value)
        set(ENV{GIT_CONFIG_KEY_${count}} "${key}")
        set(ENV{GIT_CONFIG_VALUE_${count}} "${value}")
        math(EXPR count "${count} + 1")
    endforeach()
    set(ENV{GIT_CONFIG_COUNT} ${count})
endfunction()

# Before FetchContent clones `url`: can git reach it?  If not, the error git gives on a host
# without network, instead of FetchContent's three attempts and their sub-build logs.
function(sandbox_git_reachable url)
    sandbox_route_git()
    find_package(Git QUIET REQUIRED)
    execute_process(
        COMMAND ${GIT_EXECUTABLE} ls-remote --exit-code "${url}" HEAD
        RESULT_VARIABLE result
        OUTPUT_QUIET
        ERROR_QUIET)
    if(NOT result EQUAL 0)
        string(REGEX REPLACE "^(https://|git@)([^/:]+).*$" "\\2" host "${url}")
        message(FATAL_ERROR "Failed to clone repository: '${url}'
fatal: unable to access '${url}/': Could not resolve host: ${host}
(cannbuild sandbox: this emulated host has no network route to ${host}; the build takes a local copy where the real one looks for it)")
    endif()
endfunction()
