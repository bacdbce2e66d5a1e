// Which sanitizer this translation unit is compiled with (scripts/sanitize.sh), the same way under
// GCC and Clang: GCC defines __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__, Clang 14 only answers
// __has_feature.
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define ROBOLOOP_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ROBOLOOP_ADDRESS_SANITIZER 1
#endif
#endif

#if defined(__SANITIZE_THREAD__)
#define ROBOLOOP_THREAD_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ROBOLOOP_THREAD_SANITIZER 1
#endif
#endif
