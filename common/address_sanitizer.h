#pragma once
/// EST_UNDER_ASAN: whether this translation unit is built with AddressSanitizer.

// 1 where AddressSanitizer instruments this build (clang's __has_feature, gcc's
// __SANITIZE_ADDRESS__), else 0. Code that manages memory itself poisons what it keeps, and
// tests that measure what ASan replaces (glibc malloc, operator new) know to expect it.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EST_UNDER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(EST_UNDER_ASAN)
#define EST_UNDER_ASAN 1
#endif
#ifndef EST_UNDER_ASAN
#define EST_UNDER_ASAN 0
#endif
