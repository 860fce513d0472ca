/* Always-on assertions (VT_ASSERT) and debug-only checks (VT_DASSERT).
 * A failed assertion prints the expression, file:line and core, then aborts.
 * Owns the thread-local id of the reactor core a thread runs, for that line. */
#ifndef VT_ASSERT_H
#define VT_ASSERT_H

#include <stdnoreturn.h>

noreturn void vt_assert_fail(const char *expr, const char *file, int line);

/* Records that this thread runs reactor core `id` (>= 0), or -1 when it is not a reactor
 * thread (the default). A failed assertion on this thread then names the core. The reactor
 * sets it when its thread starts and clears it when the thread exits. Any thread; touches
 * only its own thread-local value; never blocks. */
void vt_assert_set_core(int id);
/* The id last set on this thread by vt_assert_set_core(), -1 if none. Any thread. */
int vt_assert_core(void);

#define VT_ASSERT(expr)                                                                        \
    do {                                                                                       \
        if (__builtin_expect(!(expr), 0))                                                      \
            vt_assert_fail(#expr, __FILE__, __LINE__);                                         \
    } while (0)

#if defined(VT_DEBUG_BUILD) && VT_DEBUG_BUILD
#define VT_DASSERT(expr) VT_ASSERT(expr)
#else
#define VT_DASSERT(expr) ((void)sizeof(expr))
#endif

#define VT_MUST_USE __attribute__((warn_unused_result))
#define VT_LIKELY(x) __builtin_expect(!!(x), 1)
#define VT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define VT_CACHELINE 64
#define VT_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

#endif
