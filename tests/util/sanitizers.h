// What a test must know about the sanitizer it runs under (scripts/sanitize.sh).
#pragma once

#include "common/sanitizer_build.h"

namespace roboloop::testing {

// True in a build with AddressSanitizer.
inline constexpr bool kAddressSanitizer =
#if defined(ROBOLOOP_ADDRESS_SANITIZER)
    true;
#else
    false;
#endif

// True in a build with ThreadSanitizer.
inline constexpr bool kThreadSanitizer =
#if defined(ROBOLOOP_THREAD_SANITIZER)
    true;
#else
    false;
#endif

// Why a test that connects Gloo in a program linked with LibTorch cannot run under AddressSanitizer.
inline constexpr const char* kNoDeepBindUnderAsan =
    "AddressSanitizer refuses dlopen with RTLD_DEEPBIND, which keeps Debian's Gloo apart from LibTorch's copy in a "
    "program linked with LibTorch (train/gloo/cpu_collectives_loader.cc; docs/RELIABILITY.md, \"Sanitizers\")";

}  // namespace roboloop::testing
