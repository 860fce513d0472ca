/* Happens-before annotations for ThreadSanitizer. Concurrency Kit publishes
 * ring slots with inline-asm fences TSan cannot see; the ring wrapper adds
 * explicit release/acquire edges in TSan builds and nothing otherwise. */
#ifndef VT_TSAN_H
#define VT_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define VT_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define VT_TSAN 1
#endif
#endif

#ifdef VT_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define VT_TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#define VT_TSAN_RELEASE(p) __tsan_release((void *)(p))
#else
#define VT_TSAN_ACQUIRE(p) ((void)0)
#define VT_TSAN_RELEASE(p) ((void)0)
#endif

#endif
